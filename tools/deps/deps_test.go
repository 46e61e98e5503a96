// Package deps holds deps.sh, the script `make test` and .ci/run call to
// install what a fresh Debian machine lacks and to skip, naming the
// package, a test step whose tools are missing. The tests run it in a
// sandbox: a PATH of the basic tools plus fakes (apt-get, node, qemu).
package deps

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sandbox returns a bin directory holding links to the basic tools the
// script uses and nothing else, and an environment whose PATH is it.
func sandbox(t *testing.T) (string, []string) {
	t.Helper()
	bin := t.TempDir()
	for _, tool := range []string{"bash", "sh", "sed", "paste", "sort", "grep", "id", "cat", "tr", "env", "echo"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s not found", tool)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"PATH=" + bin, "HOME=" + t.TempDir(), "CHROMIUM=" + filepath.Join(bin, "no-chromium")}
	return bin, env
}

// fake writes an executable script name into bin.
func fake(t *testing.T, bin, name, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(bin, name), []byte("#!"+filepath.Join(bin, "sh")+"\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// deps runs deps.sh with args in env and returns stdout, stderr and the
// exit code.
func deps(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command("./deps.sh", args...)
	cmd.Env = env
	var out, errw bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errw
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errw.String(), code
}

func TestRunSkipsNamingThePackage(t *testing.T) {
	bin, env := sandbox(t)
	for _, tc := range []struct {
		step, want string
	}{
		{"arm64", "make test: skipping arm64: qemu-aarch64 is not installed (apt-get install qemu-user)"},
		{"frontend", "make test: skipping frontend: node is not installed (apt-get install nodejs npm"},
		{"frontend-browser", "is not installed (apt-get install chromium, or set CHROMIUM="},
		{"app-e2e", "Xvfb is not installed (apt-get install xvfb)"},
	} {
		out, errOut, code := deps(t, env, "run", tc.step, "echo", "ran")
		if code != 0 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("run %s without its tools: exit %d, stdout %q, stderr %q; want a skip saying %q", tc.step, code, out, errOut, tc.want)
		}
		// In CI a step that cannot run fails.
		_, errOut, code = deps(t, append(env, "CI=true"), "run", tc.step, "echo", "ran")
		if code != 1 || !strings.Contains(errOut, "CI=true") {
			t.Errorf("CI=true run %s without its tools: exit %d, stderr %q", tc.step, code, errOut)
		}
	}

	// With the tool there the command runs.
	fake(t, bin, "qemu-aarch64", "exit 0\n")
	if out, errOut, code := deps(t, append(env, "CI=true"), "run", "arm64", "echo", "ran"); code != 0 || out != "ran\n" {
		t.Errorf("run arm64 with qemu: exit %d, %q %q", code, out, errOut)
	}
	// A node too old for vite is named with its version.
	fake(t, bin, "node", "echo 18.19.0\n")
	fake(t, bin, "npm", "exit 0\n")
	if _, errOut, _ := deps(t, env, "run", "frontend", "echo", "ran"); !strings.Contains(errOut, "node 18.19.0 is too old for vite 8 (need >= 20.19") {
		t.Errorf("old node: %q", errOut)
	}
	fake(t, bin, "node", "echo 20.19.1\n")
	if out, errOut, code := deps(t, env, "run", "frontend", "echo", "ran"); code != 0 || out != "ran\n" {
		t.Errorf("node 20.19.1: exit %d, %q %q", code, out, errOut)
	}
	if _, _, code := deps(t, env, "run", "no-such-step", "echo"); code != 2 {
		t.Errorf("unknown step: exit %d, want 2", code)
	}
}

func TestInstall(t *testing.T) {
	bin, env := sandbox(t)
	calls := filepath.Join(t.TempDir(), "apt-calls")
	fake(t, bin, "apt-get", `echo "$*" >> `+calls+"\n")
	fake(t, bin, "dpkg-query", "exit 1\n") // no package installed

	// Without Go nothing can run: install says so and fails.
	if out, errOut, code := deps(t, env, "install"); code != 1 || !strings.Contains(errOut, "Go is not installed") {
		t.Fatalf("install without go: exit %d, %q %q", code, out, errOut)
	}
	fake(t, bin, "go", "echo go1.19.8\n")
	if _, errOut, code := deps(t, env, "install"); code != 1 || !strings.Contains(errOut, "go1.19.8 is too old") {
		t.Fatalf("install with go 1.19: exit %d, %q", code, errOut)
	}
	fake(t, bin, "go", "echo go1.26.0\n")

	// NO_INSTALL=1: nothing is installed, the missing packages are named.
	out, _, code := deps(t, append(env, "NO_INSTALL=1"), "install")
	if code != 0 || !strings.Contains(out, "NO_INSTALL is set: not installing ") || !strings.Contains(out, "qemu-user") ||
		!strings.Contains(out, "make test will skip arm64: qemu-aarch64 is not installed (apt-get install qemu-user)") {
		t.Fatalf("install with NO_INSTALL: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(calls); err == nil {
		t.Fatal("apt-get ran with NO_INSTALL=1")
	}

	out, _, code = deps(t, env, "install")
	if code != 0 {
		t.Fatalf("install: exit %d\n%s", code, out)
	}
	if os.Getuid() != 0 {
		if !strings.Contains(out, "not root: not installing") {
			t.Fatalf("install as a user: %s", out)
		}
		return
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatalf("apt-get not run as root: %s", out)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || lines[0] != "update -qq" || !strings.HasPrefix(lines[1], "install -y -qq --no-install-recommends ") {
		t.Fatalf("apt-get calls:\n%s", b)
	}
	for _, p := range []string{"qemu-user", "chromium", "nodejs", "npm", "xvfb", "libwebkit2gtk-4.1-dev", "dbus", "curl", "util-linux", "g++"} {
		if !strings.Contains(" "+lines[1]+" ", " "+p+" ") {
			t.Errorf("apt-get install lacks %s: %s", p, lines[1])
		}
	}
}
