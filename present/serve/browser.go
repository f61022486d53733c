package serve

import "os/exec"

// BrowserNames are the browsers, by their names on PATH, that drive the
// served pages in their test (headless Chromium through chromedp): Debian's
// chromium (scripts/setup installs it) and its other names.
var BrowserNames = []string{"chromium", "chromium-browser", "google-chrome"}

// FindBrowser is the first of BrowserNames found on PATH ("" when none is).
func FindBrowser() string {
	for _, name := range BrowserNames {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}
