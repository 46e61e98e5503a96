package clients

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readmeExamples returns the shell examples of README.md that talk to a
// running daemon: the lines of its ```sh blocks that start with curl or
// eval, or are `ruvllm status|socket|env` alone (a synopsis line with
// [OPTIONS] is not an example), in order.
func readmeExamples(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	example := regexp.MustCompile(`^(curl |eval |ruvllm (status|socket|env) *(#.*)?$)`)
	var lines []string
	inSh := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```"):
			inSh = !inSh && strings.TrimPrefix(line, "```") == "sh"
		case inSh && example.MatchString(line):
			lines = append(lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestREADMEExamples runs the README's shell examples as written, in one
// shell, against a daemon serving the model `make run` serves (the shared
// llama 19m, or a synthetic model of its name), with `ruvllm` freshly
// built on PATH and curl failing on any HTTP error.
func TestREADMEExamples(t *testing.T) {
	for _, tool := range []string{"curl", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			cannotRun(t, "%s is not installed (apt-get install %s): the README's examples cannot run", tool, tool)
		}
	}
	lines := readmeExamples(t)
	var curls int
	for _, l := range lines {
		if strings.HasPrefix(l, "curl ") {
			curls++
			// An example must find the daemon the way any user's shell can.
			if !strings.Contains(l, `--unix-socket "$(ruvllm socket)"`) && !strings.Contains(l, "$OPENAI_BASE_URL") && !strings.Contains(l, "$OLLAMA_HOST") {
				t.Errorf("README example reaches the daemon neither through \"$(ruvllm socket)\" nor ruvllm env's variables: %s", l)
			}
		}
	}
	if curls < 4 {
		t.Fatalf("found %d curl examples in README.md, want at least 4:\n%s", curls, strings.Join(lines, "\n"))
	}

	d := startDaemon(t, "ruvllm-test-llama-19m-q8_0", false)
	bin := t.TempDir()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, goTool, "build", "-o", bin, "github.com/ruvllm/ruvllm/cmd/ruvllm").CombinedOutput(); err != nil {
		t.Fatalf("go build ruvllm: %v\n%s", err, out)
	}
	curlHome := t.TempDir()
	if err := os.WriteFile(filepath.Join(curlHome, ".curlrc"), []byte("--fail-with-body\n--silent\n--show-error\n--max-time 120\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Each example prints a marker line first, so the output can be split
	// by example.
	var script strings.Builder
	script.WriteString("set -eo pipefail\n")
	for i, l := range lines {
		script.WriteString("echo '@@example " + strconv.Itoa(i) + "'\n" + l + "\necho\n")
	}
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "RUVLLM_SOCKET="+d.sock,
		"CURL_HOME="+curlHome, "HOME="+curlHome)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("README examples: %v\n%s", err, out)
	}
	parts := strings.Split(string(out), "@@example ")[1:]
	if len(parts) != len(lines) {
		t.Fatalf("%d examples ran, %d in the README:\n%s", len(parts), len(lines), out)
	}
	for i, l := range lines {
		_, got, _ := strings.Cut(parts[i], "\n")
		got = strings.TrimSpace(got)
		switch {
		case strings.HasPrefix(l, "eval "):
			continue // prints nothing; the lines after it use what it set
		case got == "":
			t.Errorf("%s: no output", l)
		case strings.Contains(l, `"stream":true`) && !strings.Contains(got, "data: [DONE]"):
			t.Errorf("%s: no [DONE] in\n%s", l, got)
		case strings.Contains(l, "/api/generate") && !strings.Contains(got, `"done":true`):
			t.Errorf("%s: no final object in\n%s", l, got)
		case strings.HasPrefix(l, "ruvllm status") && !strings.Contains(got, d.sock):
			t.Errorf("%s: the socket is not named in\n%s", l, got)
		}
		if strings.Contains(got, `"error"`) {
			t.Errorf("%s:\n%s", l, got)
		}
	}
	t.Logf("%d README examples ran:\n%s", len(lines), strings.Join(lines, "\n"))
}
