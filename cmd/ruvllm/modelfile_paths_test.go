package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadModelfilePaths: FROM and ADAPTER name files as ollama create
// finds them: a bare file name next to the Modelfile (FROM model.gguf) and
// a path under "~/" are made absolute, where the daemon looked for them
// in its own working directory; a model name stays a name.
func TestReadModelfilePaths(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	for _, p := range []string{filepath.Join(dir, "model.gguf"), filepath.Join(dir, "lora.gguf"), filepath.Join(home, "m2.gguf")} {
		if err := os.WriteFile(p, []byte("GGUF"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ line, want string }{
		{"FROM model.gguf", "FROM " + filepath.Join(dir, "model.gguf")},
		{"FROM ./model.gguf", "FROM " + filepath.Join(dir, "model.gguf")},
		{"ADAPTER lora.gguf", "ADAPTER " + filepath.Join(dir, "lora.gguf")},
		{"FROM ~/m2.gguf", "FROM " + filepath.Join(home, "m2.gguf")},
		{"FROM llama3.1", "FROM llama3.1"},
		{"FROM missing.gguf", "FROM missing.gguf"},
	} {
		t.Run(c.line, func(t *testing.T) {
			mf := filepath.Join(dir, "Modelfile")
			if err := os.WriteFile(mf, []byte(c.line+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := readModelfile(mf)
			if err != nil {
				t.Fatal(err)
			}
			if got = strings.TrimSpace(got); got != c.want {
				t.Errorf("read %q, want %q", got, c.want)
			}
		})
	}
}

// TestReadModelfileTextBlocks: a FROM or ADAPTER line inside a value
// between triple quotes (a SYSTEM, TEMPLATE, MESSAGE or LICENSE that
// quotes a Modelfile) is text and stays as written; only the instructions
// outside are made absolute.
func TestReadModelfileTextBlocks(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "model.gguf"), []byte("GGUF"), 0o600); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(dir, "model.gguf")
	for _, c := range []struct{ name, in, want string }{
		{"system", "FROM model.gguf\nSYSTEM \"\"\"Explain:\nFROM model.gguf\n\"\"\"\n",
			"FROM " + abs + "\nSYSTEM \"\"\"Explain:\nFROM model.gguf\n\"\"\"\n"},
		{"template tab", "TEMPLATE\t\"\"\"{{ .Prompt }}\nADAPTER model.gguf\"\"\"\nADAPTER model.gguf\n",
			"TEMPLATE\t\"\"\"{{ .Prompt }}\nADAPTER model.gguf\"\"\"\nADAPTER " + abs + "\n"},
		{"message", "MESSAGE user \"\"\"what does\nFROM model.gguf\ndo?\"\"\"\nFROM model.gguf\n",
			"MESSAGE user \"\"\"what does\nFROM model.gguf\ndo?\"\"\"\nFROM " + abs + "\n"},
		{"closed on one line", "SYSTEM \"\"\"short\"\"\"\nFROM model.gguf\n",
			"SYSTEM \"\"\"short\"\"\"\nFROM " + abs + "\n"},
		{"comment", "# SYSTEM \"\"\"\nFROM model.gguf\n",
			"# SYSTEM \"\"\"\nFROM " + abs + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mf := filepath.Join(dir, "Modelfile")
			if err := os.WriteFile(mf, []byte(c.in), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := readModelfile(mf)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("read %q, want %q", got, c.want)
			}
		})
	}
}
