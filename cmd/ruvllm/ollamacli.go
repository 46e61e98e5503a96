package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/ipc"
)

// The commands an Ollama user types: list, show, cp and create, over the
// daemon's Ollama routes.

func newListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the daemon's models with their size and age (as ollama list)",
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), false)
			if err != nil {
				return err
			}
			tags, err := c.Tags(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 3, ' ', 0)
			fmt.Fprintln(tw, "NAME\tID\tSIZE\tMODIFIED")
			for _, m := range tags.Models {
				id := strings.TrimPrefix(m.Digest, "sha256:")
				id = id[:min(len(id), 12)]
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Name, id, humanBytes(m.Size), age(m.ModifiedAt))
			}
			return tw.Flush()
		},
	}
}

// humanBytes writes a size as Ollama's list does (decimal units).
func humanBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.0f KB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// age writes an RFC 3339 time as how long ago it was ("3 hours ago").
func age(at string) string {
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return at
	}
	d := time.Since(t)
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}} {
		if n := int(d / u.d); n >= 1 {
			if n > 1 {
				return fmt.Sprintf("%d %ss ago", n, u.name)
			}
			return "1 " + u.name + " ago"
		}
	}
	return "just now"
}

func newShowCmd() *cobra.Command {
	var modelfile, parameters, template, system, license bool
	cmd := &cobra.Command{
		Use:   "show MODEL",
		Short: "Show a model's details, or one of its Modelfile, parameters, template, system prompt, license (as ollama show)",
		Args:  exactArgs(1, "MODEL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), false)
			if err != nil {
				return err
			}
			s, err := c.Show(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			for _, part := range []struct {
				on   bool
				text string
			}{{modelfile, s.Modelfile}, {parameters, s.Parameters}, {template, s.Template}, {system, s.System}, {license, s.License}} {
				if part.on {
					fmt.Fprintln(w, strings.TrimRight(part.text, "\n"))
					return nil
				}
			}
			printShow(w, s)
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&modelfile, "modelfile", false, "show the Modelfile")
	f.BoolVar(&parameters, "parameters", false, "show the parameters")
	f.BoolVar(&template, "template", false, "show the prompt template")
	f.BoolVar(&system, "system", false, "show the system prompt")
	f.BoolVar(&license, "license", false, "show the license")
	cmd.MarkFlagsMutuallyExclusive("modelfile", "parameters", "template", "system", "license")
	return cmd
}

func newCpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cp SOURCE DESTINATION",
		Short: "Copy a model under another name (as ollama cp)",
		Args:  exactArgs(2, "SOURCE DESTINATION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), false)
			if err != nil {
				return err
			}
			if err := c.Copy(cmd.Context(), args[0], args[1]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "copied '%s' to '%s'\n", args[0], args[1])
			return nil
		},
	}
}

func newCreateCmd() *cobra.Command {
	var file, quantize string
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a model from a Modelfile (as ollama create -f Modelfile)",
		Args:  exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := readModelfile(file)
			if err != nil {
				return err
			}
			c, err := connect(cmd.Context(), true)
			if err != nil {
				return err
			}
			if err := c.Create(cmd.Context(), ipc.CreateRequest{Model: args[0], Modelfile: text, Quantize: quantize}); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "success")
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "Modelfile", "the Modelfile")
	cmd.Flags().StringVarP(&quantize, "quantize", "q", "", "quantize the model to this type (q4_K_M, q8_0, ...)")
	return cmd
}

// maxModelfile bounds the Modelfile create reads (the daemon's own bound
// on a request body is larger).
const maxModelfile = 1 << 20

// modelfilePath is the absolute path of a file a FROM or ADAPTER line
// names as ollama create finds it: "~/" is the home directory, and a
// relative path, with or without "./" (FROM model.gguf), is taken from
// the Modelfile's directory dir. ok is false where no such file exists:
// the argument is a model name (FROM llama3.1) or a path the daemon
// reads as it is.
func modelfilePath(dir, arg string) (string, bool) {
	if rest, ok := strings.CutPrefix(arg, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", false
		}
		arg = filepath.Join(home, rest)
	}
	if !filepath.IsAbs(arg) {
		arg = filepath.Join(dir, arg)
	}
	if !fileExists(arg) {
		return "", false
	}
	abs, err := filepath.Abs(arg)
	return abs, err == nil
}

// readModelfile reads the Modelfile at path with the paths its FROM and
// ADAPTER lines give relative to the Modelfile made absolute, as ollama
// create reads them: the daemon resolves paths from its own directory.
func readModelfile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("modelfile: %w", err)
	}
	if len(b) > maxModelfile {
		return "", fmt.Errorf("modelfile %s: %d bytes, more than %d", path, len(b), maxModelfile)
	}
	dir := filepath.Dir(path)
	var out strings.Builder
	// Without its byte order mark, the first line's FROM is found.
	sc := bufio.NewScanner(strings.NewReader(strings.TrimPrefix(string(b), "\ufeff")))
	sc.Buffer(make([]byte, 0, 64<<10), maxModelfile)
	// inText is true between the """ that opens a multi-line value
	// (SYSTEM, TEMPLATE, MESSAGE, LICENSE) and the line that closes it:
	// a FROM or ADAPTER line there is text, not an instruction.
	inText := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case inText:
			inText = !strings.Contains(line, `"""`)
		case opensText(line):
			inText = true
		default:
			fields := strings.Fields(line)
			if len(fields) == 2 && (strings.EqualFold(fields[0], "FROM") || strings.EqualFold(fields[0], "ADAPTER")) {
				if p, ok := modelfilePath(dir, fields[1]); ok {
					line = fields[0] + " " + p
				}
			}
		}
		out.WriteString(line)
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("modelfile %s: %w", path, err)
	}
	return out.String(), nil
}

// opensText reports whether a Modelfile line starts a value between
// triple quotes that it does not close, as the daemon's parser reads it:
// the command's value (after a MESSAGE's role) starts with """ and holds
// no second """.
func opensText(line string) bool {
	l := strings.TrimSpace(line)
	if strings.HasPrefix(l, "#") {
		return false
	}
	cmd, rest := cutField(l)
	if strings.EqualFold(cmd, "MESSAGE") {
		_, rest = cutField(rest)
	}
	body, ok := strings.CutPrefix(rest, `"""`)
	return ok && !strings.Contains(body, `"""`)
}

// cutField cuts s at its first space or tab, the Modelfile's separator
// after a command and a MESSAGE's role, and trims what follows.
func cutField(s string) (field, rest string) {
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i+1:])
}
