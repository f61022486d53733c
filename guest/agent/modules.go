package agent

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// readLoadOrder returns the module paths listed in a load-order file: one
// absolute path a line; blank lines and lines starting with # are skipped.
func readLoadOrder(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		paths = append(paths, line)
	}
	return paths, nil
}

// loadModules loads the modules of the load-order file with finit_module,
// in order. A module that is already loaded (EEXIST) is fine. Failures are
// reported on the console and returned as problems; loading goes on, since
// the serial fallback still works without virtio. It returns a summary for
// the run log.
func loadModules(orderFile string) (summary string, problems []string) {
	paths, err := readLoadOrder(orderFile)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", []string{fmt.Sprintf("modules: %v", err)}
	}
	var loaded []string
	for _, p := range paths {
		name := moduleName(p)
		if err := loadModule(p); err != nil {
			msg := fmt.Sprintf("load module %s: %v", p, err)
			if errors.Is(err, unix.ENOENT) {
				msg += " (unknown symbol: a dependency missing or listed later?)"
			}
			logf("%s", msg)
			problems = append(problems, msg)
			continue
		}
		loaded = append(loaded, name)
	}
	logf("modules loaded: %s", strings.Join(loaded, " "))
	return "modules loaded: " + strings.Join(loaded, " "), problems
}

func loadModule(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	flags := 0
	for _, ext := range []string{".xz", ".zst", ".gz"} {
		if strings.HasSuffix(path, ext) {
			flags |= unix.MODULE_INIT_COMPRESSED_FILE // 6.1+ with CONFIG_MODULE_DECOMPRESS
		}
	}
	err = unix.FinitModule(fd, "", flags)
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	return err
}

// moduleName returns the module name of a .ko path: "virtio_pci" for
// "/lib/modules/lpmbisect/virtio_pci.ko.xz".
func moduleName(path string) string {
	base := path[strings.LastIndexByte(path, '/')+1:]
	if i := strings.Index(base, ".ko"); i >= 0 {
		base = base[:i]
	}
	return base
}
