package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/testmodel"
	"github.com/ruvllm/ruvllm/ipc"
)

// TestChatOllamaCommands: the REPL takes ollama run's commands: /set
// parameter (applied to every request and stored with the conversation,
// bad names and values refused by name), /set system, a message of
// several lines between """, /show parameters and system, /set verbose,
// /save NAME (a created model with the chat's system prompt, parameters
// and messages), /load MODEL and /set format json. Chat knew only
// /system, /up, /down, /clear and /bye.
func TestChatOllamaCommands(t *testing.T) {
	c := tinyClient(t)
	ctx := context.Background()
	in := strings.Join([]string{
		"/set parameter num_predict 3",
		"/set parameter temperature 0",
		"/set parameter top_k 5",
		"/set parameter stop END",
		"/set parameter bogus 1",
		"/set parameter top_p 7",
		"/set system Be terse.",
		`"""`, "line one", "line two", `"""`,
		"/show parameters",
		"/set verbose",
		`"""second"""`,
		"/save saved-chat",
		"/show system",
		"/nonsense",
		"/bye",
	}, "\n") + "\n"
	out, errOut, err := runCLIIn(t, strings.NewReader(in), newChatCmd(), "--temp", "0.7")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`unknown parameter "bogus"`, `/set parameter top_p: "7": want a number from 0 to 1`,
		"eval count:", "eval rate:", "(created new model 'saved-chat')", `unknown command "/nonsense"`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	for _, want := range []string{"User defined parameters:", "num_predict  3", "temperature  0", "top_k        5", `stop         ["END"]`, "Be terse."} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	m := regexp.MustCompile(`saved as conversation (conv-[0-9a-f]+)`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no conversation saved: %s", errOut)
	}
	conv, err := c.Conversation(ctx, m[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(conv.Messages) != 4 || conv.Messages[0].Content != "line one\nline two" || conv.Messages[2].Content != "second" ||
		conv.System != "Be terse." || conv.Sampling == nil || *conv.Sampling.Temperature != 0 || conv.Sampling.TopK == nil || *conv.Sampling.TopK != 5 {
		t.Fatalf("conversation %+v", conv)
	}
	for _, i := range []int{1, 3} {
		if st := conv.Messages[i].Stats; st == nil || st.CompletionTokens > 3 {
			t.Errorf("reply %d: %+v, want at most 3 tokens (num_predict)", i, st)
		}
	}
	sh, err := c.Show(ctx, "saved-chat")
	if err != nil {
		t.Fatal(err)
	}
	if sh.System != "Be terse." || len(sh.Messages) != 4 || sh.Messages[0].Content != "line one\nline two" {
		t.Errorf("saved model: system %q, messages %+v", sh.System, sh.Messages)
	}
	for _, want := range []string{"temperature", "top_k", "num_predict", "stop"} {
		if !strings.Contains(sh.Parameters, want) {
			t.Errorf("saved model's parameters lack %s: %q", want, sh.Parameters)
		}
	}

	// /load talks to the saved model in a new conversation; /set format
	// json holds replies to JSON.
	_, errOut, err = runCLIIn(t, strings.NewReader("/load nosuch\n/load saved-chat\n/show system\n/set format json\nhi\n/bye\n"), newChatCmd(), "-n", "6")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "nosuch") || !strings.Contains(errOut, "(talking to saved-chat in a new conversation)") {
		t.Fatalf("/load: %s", errOut)
	}
	m = regexp.MustCompile(`saved as conversation (conv-[0-9a-f]+)`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no conversation saved: %s", errOut)
	}
	conv, err = c.Conversation(ctx, m[1])
	if err != nil || conv.Model != "saved-chat" || len(conv.Messages) != 2 || !strings.HasPrefix(strings.TrimSpace(conv.Messages[1].Content), "{") {
		t.Fatalf("after /load and /set format json: %+v, %v", conv, err)
	}
}

// TestReadMessage: a message between """ may start on the first line,
// end on its last, or be one line; input that ends inside it is reported.
func TestReadMessage(t *testing.T) {
	for _, c := range []struct {
		first string
		rest  []string
		want  string
		whole bool
	}{
		{"", []string{"a", "b", `"""`}, "a\nb", true},
		{"a", []string{`b"""`}, "a\nb", true},
		{`one line"""`, nil, "one line", true},
		{"", []string{"a", "  indented", `c """  `}, "a\n  indented\nc ", true},
		{"a", []string{"b"}, "a\nb", false},
	} {
		i := 0
		got, whole := readMessage(c.first, func() (string, bool) {
			if i == len(c.rest) {
				return "", false
			}
			i++
			return c.rest[i-1], true
		})
		if got != c.want || whole != c.whole {
			t.Errorf("%q %q: %q %v, want %q %v", c.first, c.rest, got, whole, c.want, c.whole)
		}
	}
}

// TestRunOllamaStyle: `run MODEL PROMPT...` answers as ollama run does,
// through the daemon as a chat, the piped input before the words;
// mixing that with -m or -p, or giving no prompt from a pipe, is refused
// by name. run took only -m and -p (an argument was an error).
func TestRunOllamaStyle(t *testing.T) {
	c := tinyClient(t)
	ctx := context.Background()
	promptTokens := func(text string) int {
		r, err := c.Chat(ctx, ipc.ChatCompletionRequest{Model: "tiny", Messages: []ipc.Message{{Role: "user", Content: text}},
			SamplingFields: ipc.SamplingFields{MaxTokens: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return r.Usage.PromptTokens
	}
	for _, tc := range []struct {
		in     string
		args   []string
		prompt string
	}{
		{"", []string{"tiny", "why", "is", "the", "sky", "blue"}, "why is the sky blue"},
		{"a long document\nof two lines\n", []string{"tiny", "summarize", "it"}, "a long document\nof two lines summarize it"},
		{"only piped\n", []string{"tiny"}, "only piped"},
	} {
		out, _, err := runCLIIn(t, strings.NewReader(tc.in), newRunCmd(), append(tc.args, "-n", "3", "--temp", "0")...)
		if err != nil || out == "" {
			t.Fatalf("run %v: %q, %v", tc.args, out, err)
		}
		recs, err := c.Requests(ctx, 1)
		if err != nil || len(recs) != 1 {
			t.Fatalf("requests %v %v", recs, err)
		}
		if r := recs[0]; r.Model != "tiny" || r.CompletionTokens > 3 || r.PromptTokens != promptTokens(tc.prompt) {
			t.Errorf("run %v (input %q): record %+v, want the chat prompt %q (%d tokens)", tc.args, tc.in, r, tc.prompt, promptTokens(tc.prompt))
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tiny", "hi", "-m", "tiny"}, "not both"},
		{[]string{"tiny", "-p", "hi"}, "not both"},
		{[]string{"tiny"}, "no prompt"},
	} {
		if _, _, err := runCLIIn(t, strings.NewReader(""), newRunCmd(), tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run %v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestStopUnloadsModels: `stop MODEL` unloads a loaded model as ollama
// stop does, and the daemon keeps running; a model that is not loaded is
// named in the error. stop took no argument.
func TestStopUnloadsModels(t *testing.T) {
	c := tinyClient(t)
	ctx := context.Background()
	if _, err := c.Chat(ctx, ipc.ChatCompletionRequest{Model: "tiny", Messages: []ipc.Message{{Role: "user", Content: "hi"}},
		SamplingFields: ipc.SamplingFields{MaxTokens: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, newStopCmd(), "nosuch"); err == nil || !strings.Contains(err.Error(), `"nosuch" is not loaded`) {
		t.Errorf("stop nosuch: %v", err)
	}
	if _, _, err := runCLI(t, newStopCmd(), "--timeout", "5s", "tiny"); err == nil || !strings.Contains(err.Error(), "--timeout") {
		t.Errorf("stop --timeout tiny: %v", err)
	}
	_, errOut, err := runCLI(t, newStopCmd(), "tiny", "tiny")
	if err != nil || strings.Count(errOut, "unloaded tiny") != 1 {
		t.Fatalf("stop tiny tiny: %q, %v; want it unloaded once", errOut, err)
	}
	ps, err := c.Ps(ctx)
	if err != nil || len(ps.Models) != 0 {
		t.Fatalf("after stop tiny: ps %+v, %v (the daemon must keep running with nothing loaded)", ps, err)
	}
}

// TestOllamaCommandNames: the words an Ollama user types find ruvllm's
// commands (serve is the daemon in the foreground).
func TestOllamaCommandNames(t *testing.T) {
	root := newRootCmd()
	for word, want := range map[string]string{"serve": "daemon", "ls": "list", "run": "run", "stop": "stop", "show": "show", "ps": "ps", "rm": "rm", "cp": "cp", "create": "create", "pull": "pull"} {
		c, _, err := root.Find([]string{word})
		if err != nil || c.Name() != want {
			t.Errorf("ruvllm %s: %v, %v; want the %s command", word, c, err, want)
		}
	}
}

// TestServiceInstallDaemonArgs: the daemon flags after `service install
// --` are parsed as ruvllmd parses them before anything is installed:
// unknown flags, stray words, values ruvllmd refuses, --socket and
// relative paths are refused by name; a model name, absolute paths and
// self: drafts pass. There was no way to give the service's daemon a
// model or a TCP listener.
func TestServiceInstallDaemonArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" when accepted
	}{
		{[]string{"-m", "/models/q.gguf", "--listen", "127.0.0.1:11434"}, ""},
		{[]string{"-m", "qwen", "--draft", "self:q4_0", "--max-loaded", "2"}, ""},
		{[]string{"--draft", "qwen=/models/d.gguf", "--state-dir", "/srv/st"}, ""},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
		{[]string{"-m", "/m.gguf", "extra"}, `unexpected argument "extra"`},
		{[]string{"--socket", "/tmp/s.sock"}, "--socket is service install's own flag"},
		{[]string{"-m", "models/q.gguf"}, "--model models/q.gguf: give an absolute path"},
		{[]string{"--state-dir", "st"}, "--state-dir st: give an absolute path"},
		{[]string{"--draft", "qwen=d.gguf"}, "--draft qwen=d.gguf: give an absolute path"},
		{[]string{"--max-loaded", "0"}, "--max-loaded 0"},
		{[]string{"--threads", "abc"}, "--threads"},
		// What ruvllmd refuses as it starts was kept in the unit.
		{[]string{"--kv-type", "bogus"}, `KV type "bogus"`},
		{[]string{"--ctx-size", "-5"}, "--ctx-size -5"},
		{[]string{"--context-overflow", "bogus"}, `context overflow mode "bogus"`},
		{[]string{"--threads", "-1"}, "--threads -1"},
		{[]string{"--spec", "bogus"}, "--spec"},
		{[]string{"--listen", "0.0.0.0:11434"}, "only loopback addresses"},
		{[]string{"--listen", "127.0.0.1:99999"}, "--listen 127.0.0.1:99999"},
		{[]string{"--listen", "localhost:11434", "--kv-type", "q8_0"}, ""},
	} {
		err := checkDaemonArgs(tc.args)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
	// Words before -- are refused by name; install takes no argument of
	// its own.
	_, _, err := runCLI(t, newServiceCmd(), "install", "bogus")
	if err == nil || !strings.Contains(err.Error(), `unexpected argument "bogus"`) {
		t.Errorf("service install bogus: %v", err)
	}
}

// TestChatResumeKeepsSetParameters: a conversation resumed after /set
// parameter keeps what it set: num_predict bounds the replies (it was not
// stored, so a resumed chat wrote 512 tokens), and /show parameters and
// /save list the stored parameters (they listed none, and the saved
// model had no PARAMETERs).
func TestChatResumeKeepsSetParameters(t *testing.T) {
	c := tinyClient(t)
	ctx := context.Background()
	in := "/set parameter num_predict 2\n/set parameter top_k 3\nhello\n"
	_, errOut, err := runCLIIn(t, strings.NewReader(in), newChatCmd(), "--temp", "1")
	m := regexp.MustCompile(`saved as conversation (conv-[0-9a-f]+)`).FindStringSubmatch(errOut)
	if err != nil || m == nil {
		t.Fatalf("chat: %v %q", err, errOut)
	}
	out, errOut, err := runCLIIn(t, strings.NewReader("/show parameters\nagain\n/save resumed-chat\n"), newChatCmd(), "--conversation", m[1])
	if err != nil {
		t.Fatalf("resume: %v %q", err, errOut)
	}
	for _, want := range []string{"num_predict  2", "top_k        3", "temperature  1"} {
		if !strings.Contains(out, want) {
			t.Errorf("/show parameters after resume lacks %q:\n%s", want, out)
		}
	}
	conv, err := c.Conversation(ctx, m[1])
	if err != nil {
		t.Fatal(err)
	}
	if n := len(conv.Messages); n != 4 {
		t.Fatalf("%d messages, want 4", n)
	}
	if st := conv.Messages[3].Stats; st == nil || st.CompletionTokens > 2 {
		t.Errorf("resumed reply: %+v, want at most 2 tokens (num_predict)", st)
	}
	sh, err := c.Show(ctx, "resumed-chat")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"num_predict", "top_k"} {
		if !strings.Contains(sh.Parameters, want) {
			t.Errorf("saved model's parameters lack %s: %q", want, sh.Parameters)
		}
	}
}

// TestChatShowModelFile: /show describes a model given by path (-m or
// /load FILE.gguf) before any reply; it asked the daemon for the file's
// name, which it knows only once the model is loaded: "model not found".
func TestChatShowModelFile(t *testing.T) {
	startTinyDaemon(t)
	file := filepath.Join(t.TempDir(), "other-model.gguf")
	o := testmodel.DefaultOptions()
	o.Arch, o.Layers, o.Dim, o.Heads, o.KVHeads, o.FF, o.ContextLength = "llama", 1, 32, 2, 1, 64, 512
	if err := testmodel.Write(context.Background(), o, file); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		in   string
	}{
		{"-m FILE", []string{"-m", file}, "/show info\n"},
		{"/load FILE", nil, "/load " + file + "\n/show info\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := runCLIIn(t, strings.NewReader(tc.in), newChatCmd(), tc.args...)
			if err != nil || strings.Contains(errOut, "error:") || !strings.Contains(out, "context length   512") {
				t.Fatalf("/show info: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
			}
		})
	}
}

// TestRunREPLFlags: `run MODEL` at a terminal opens the chat with run's
// --system, --temp and -n, and refuses a run flag the chat cannot apply;
// --temp and -n were dropped without a word (replies ran to 512 tokens
// under -n 2).
func TestRunREPLFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    []string
		wantErr string
	}{
		{[]string{"tiny"}, []string{"-m", "tiny"}, ""},
		{[]string{"tiny", "-n", "2", "--temp", "0", "--system", "Be brief."},
			[]string{"-m", "tiny", "-n", "2", "--system", "Be brief.", "--temp", "0"}, ""},
		{[]string{"tiny", "--top-k", "5"}, nil, "--top-k"},
		{[]string{"tiny", "--seed", "1"}, nil, "--seed"},
	} {
		cmd := newRunCmd()
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		got, err := chatREPLArgs(cmd.Flags(), cmd.Flags().Arg(0))
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("run %v: %v, want an error naming %s", tc.args, err, tc.wantErr)
			}
		case err != nil || !slices.Equal(got, tc.want):
			t.Errorf("run %v: chat %v, %v; want %v", tc.args, got, err, tc.want)
		}
	}
}

// TestRunPromptFromDevNull: input from /dev/null (cron, ssh -n, nohup)
// is no terminal: `run MODEL` with no words has no prompt, and `run
// MODEL WORDS` answers the words. /dev/null, a character device, was read
// as a terminal: run MODEL printed the chat's ">>> " and exited 0.
func TestRunPromptFromDevNull(t *testing.T) {
	for _, tc := range []struct {
		words   []string
		prompt  string
		wantErr string
	}{
		{nil, "", "no prompt"},
		{[]string{"why", "not"}, "why not", ""},
	} {
		devNull, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		prompt, interactive, err := ollamaRunPrompt(devNull, tc.words)
		devNull.Close()
		if interactive || prompt != tc.prompt || (tc.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("run MODEL %v </dev/null: prompt %q, interactive %v, %v; want %q, error %q", tc.words, prompt, interactive, err, tc.prompt, tc.wantErr)
		}
	}
}

// TestChatSetThink: /set think (and --think) asks for thinking, so a
// created model whose TEMPLATE thinks only when asked (.Think, as
// Ollama's do) reasons; /set think was accepted ("thinking on") but sent
// nothing, and the model answered without reasoning.
func TestChatSetThink(t *testing.T) {
	c := tinyClient(t)
	ctx := context.Background()
	tmpl := "{{ range .Messages }}{{ .Role }}: {{ .Content }}\n{{ end }}assistant: " +
		"{{ if .Think }}<think>\n{{ else }}<think>\n\n</think>\n\n{{ end }}"
	if err := c.Create(ctx, ipc.CreateRequest{Model: "thinker", From: "tiny", Template: tmpl}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		in   string
	}{
		{"/set think", []string{"-m", "thinker"}, "/set think\nhi\n"},
		{"--think", []string{"-m", "thinker", "--think"}, "hi\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, err := runCLIIn(t, strings.NewReader(tc.in), newChatCmd(), append(tc.args, "-n", "3", "--temp", "0", "--no-save")...)
			if err != nil || !strings.Contains(errOut, "Thinking...") {
				t.Errorf("no reasoning shown: %v\n%s", err, errOut)
			}
		})
	}
}

// TestChatCommandUsage: a known command typed without its words (or with
// too many) tells how to type it; "/save" alone was an unknown command.
func TestChatCommandUsage(t *testing.T) {
	startTinyDaemon(t)
	for _, tc := range []struct{ in, want string }{
		{"/save", "usage: /save NAME"},
		{"/save a b", "usage: /save NAME"},
		{"/load", "usage: /load MODEL"},
		{"/show", "usage: /show info"},
		{"/set", "usage: /set parameter NAME VALUE"},
		{"/unset", "usage: /unset format | system"},
		{"/bogus", `unknown command "/bogus"`},
	} {
		_, errOut, err := runCLIIn(t, strings.NewReader(tc.in+"\n"), newChatCmd(), "--no-save")
		if err != nil || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: %v %q, want %q", tc.in, err, errOut, tc.want)
		}
	}
}

// tinyClient starts a daemon for the test (startTinyDaemon) and returns a
// client of it, closed when the test ends.
func tinyClient(t *testing.T) *ipc.Client {
	t.Helper()
	startTinyDaemon(t)
	c, err := ipc.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
