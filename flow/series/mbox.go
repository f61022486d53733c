package series

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/mail"
	"os"
	"regexp"
	"strings"
)

// message is one mail of a series: a patch or its cover letter.
type message struct {
	Subject   string
	MessageID string // with its angle brackets, as the header has it
	InReplyTo string
	// References is the References header, ids separated by spaces.
	References string
	// Raw is the whole message as an mbox holds it, "From " line first:
	// what git am applies.
	Raw []byte
	// IsPatch: the body has a diff.
	IsPatch bool
}

// thread is a series as mail: the patches in order and the cover letter
// when there is one.
type thread struct {
	Cover   *message
	Patches []*message
}

// ErrNoPatches is wrapped when an mbox holds no patch.
var ErrNoPatches = errors.New("no patch in the mbox")

// coverSubject matches a cover letter's subject: "[PATCH 0/5] …",
// "[PATCH bpf-next v2 00/12] …".
var coverSubject = regexp.MustCompile(`\[[^]]*\b0+/[0-9]+\]`)

// readThread reads the mbox file mbox (as git format-patch --stdout, or
// the patch files concatenated, or b4 am writes it) and, when cover is
// not "", the cover letter from a file of its own (b4 am's .cover). A
// message without a diff is the cover letter when its subject numbers it
// 0/N; any other is ignored.
func readThread(mbox, cover string) (*thread, error) {
	data, err := os.ReadFile(mbox)
	if err != nil {
		return nil, fmt.Errorf("read mbox: %w", err)
	}
	msgs, err := splitMbox(data)
	if err != nil {
		return nil, fmt.Errorf("mbox %s: %w", mbox, err)
	}
	t := &thread{}
	for _, m := range msgs {
		switch {
		case m.IsPatch:
			t.Patches = append(t.Patches, m)
		case t.Cover == nil && coverSubject.MatchString(m.Subject):
			t.Cover = m
		}
	}
	if cover != "" {
		data, err := os.ReadFile(cover)
		if err != nil {
			return nil, fmt.Errorf("read cover letter: %w", err)
		}
		cm, err := splitMbox(data)
		if err != nil || len(cm) == 0 {
			return nil, fmt.Errorf("cover letter %s: not a mail (%v)", cover, err)
		}
		t.Cover = cm[0]
	}
	if len(t.Patches) == 0 {
		return nil, fmt.Errorf("%w %s (give git format-patch output or b4 am's .mbx)", ErrNoPatches, mbox)
	}
	return t, nil
}

// splitMbox splits an mbox into its messages. A file that does not start
// with a "From " line is one message.
func splitMbox(data []byte) ([]*message, error) {
	var chunks [][]byte
	var cur []byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte("From ")) && (len(cur) == 0 || bytes.HasSuffix(cur, []byte("\n\n"))) {
			if len(bytes.TrimSpace(cur)) > 0 {
				chunks = append(chunks, cur)
			}
			cur = nil
		}
		cur = append(append(cur, line...), '\n')
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(cur)) > 0 {
		chunks = append(chunks, cur)
	}
	var out []*message
	for _, c := range chunks {
		body := c
		if bytes.HasPrefix(c, []byte("From ")) {
			_, body, _ = bytes.Cut(c, []byte("\n"))
		}
		m, err := mail.ReadMessage(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", len(out)+1, err)
		}
		var text bytes.Buffer
		text.ReadFrom(m.Body)
		dec := new(mime.WordDecoder)
		subject, err := dec.DecodeHeader(m.Header.Get("Subject"))
		if err != nil {
			subject = m.Header.Get("Subject")
		}
		raw := c
		if !bytes.HasPrefix(c, []byte("From ")) {
			raw = append([]byte("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"), c...)
		}
		out = append(out, &message{
			Subject:    strings.Join(strings.Fields(subject), " "),
			MessageID:  strings.TrimSpace(m.Header.Get("Message-Id")),
			InReplyTo:  strings.TrimSpace(m.Header.Get("In-Reply-To")),
			References: strings.Join(strings.Fields(m.Header.Get("References")), " "),
			Raw:        raw,
			IsPatch:    bytes.Contains(text.Bytes(), []byte("\ndiff --git ")) || bytes.HasPrefix(text.Bytes(), []byte("diff --git ")),
		})
	}
	return out, nil
}

// Reply is how a reply to the series threads: the headers a mail client
// needs.
type Reply struct {
	Subject    string `json:"subject"`
	InReplyTo  string `json:"in_reply_to,omitempty"`
	References string `json:"references,omitempty"`
}

// Reply returns the headers of a reply to the thread: to its cover letter,
// else to what the first patch answers (b4 am's patches carry the cover's
// id in In-Reply-To) under the first patch's subject, else to the first
// patch.
func (t *thread) Reply() Reply {
	to := t.Cover
	if to == nil {
		to = t.Patches[0]
		if to.InReplyTo != "" {
			refs := to.References
			if refs == "" {
				refs = to.InReplyTo
			}
			return Reply{Subject: reSubject(to.Subject), InReplyTo: to.InReplyTo, References: refs}
		}
	}
	refs := strings.TrimSpace(to.References + " " + to.MessageID)
	return Reply{Subject: reSubject(to.Subject), InReplyTo: to.MessageID, References: refs}
}

func reSubject(s string) string {
	if strings.HasPrefix(strings.ToLower(s), "re:") {
		return s
	}
	return "Re: " + s
}
