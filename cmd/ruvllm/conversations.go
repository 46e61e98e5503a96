package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/ipc"
)

func newConversationsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "conversations [list | show ID | rm ID...]",
		Aliases: []string{"conv"},
		Short:   "List, show or remove the conversations saved in the daemon",
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0 || args[0] == "list":
				return cobra.MaximumNArgs(1)(cmd, args)
			case args[0] == "show":
				if len(args) != 2 {
					return fmt.Errorf("show takes one conversation ID")
				}
			case args[0] == "rm":
				if len(args) < 2 {
					return fmt.Errorf("rm takes one or more conversation IDs")
				}
			default:
				return fmt.Errorf("unknown action %q: want list, show ID or rm ID", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := connect(ctx, false)
			if err != nil {
				return err
			}
			defer c.Close()
			w := cmd.OutOrStdout()
			switch {
			case len(args) == 0 || args[0] == "list":
				list, err := c.Conversations(ctx)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(w, list)
				}
				return printConversations(w, list, time.Now())
			case args[0] == "show":
				conv, err := c.Conversation(ctx, args[1])
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(w, conv)
				}
				printConversation(w, conv)
				return nil
			}
			// Every id is tried (like rm): one that is missing does not keep
			// the others; the errors are reported together.
			var errs []error
			for _, id := range args[1:] {
				if err := c.DeleteConversation(ctx, id); err != nil {
					errs = append(errs, fmt.Errorf("remove %s: %w", id, err))
					continue
				}
				fmt.Fprintln(w, "removed", id)
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the daemon's JSON")
	return cmd
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printConversations writes a table of conversations, newest first as the
// daemon lists them.
func printConversations(w io.Writer, list []ipc.Conversation, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUPDATED\tMESSAGES\tMODEL\tTITLE")
	for _, c := range list {
		model := c.Model
		if model == "" {
			model = "(default)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", c.ID, ago(now.Sub(c.UpdatedAt)), c.MessageCount, model, oneLine(c.Title, 60))
	}
	return tw.Flush()
}

// printConversation writes a conversation's settings and thread; each
// reply is followed by the id that `ruvllm feedback` rates it by.
func printConversation(w io.Writer, c ipc.Conversation) {
	fmt.Fprintf(w, "%s  %s\n", c.ID, c.Title)
	if c.Model != "" {
		fmt.Fprintf(w, "model:  %s\n", c.Model)
	}
	if c.System != "" {
		fmt.Fprintf(w, "system: %s\n", c.System)
	}
	for _, m := range c.Messages {
		fmt.Fprintf(w, "\n[%s] %s\n", m.Role, m.Content)
		if m.RequestID == "" {
			continue
		}
		info := m.RequestID
		if st := m.Stats; st != nil {
			info += fmt.Sprintf(", %d tokens, %.1f tok/s, first token %.0f ms", st.CompletionTokens, st.TokensPerSecond, st.TTFTMillis)
		}
		fmt.Fprintf(w, "  (%s)\n", info)
	}
}

// ago renders an age as "12s ago", "5m ago", "3h ago" or "4d ago".
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// oneLine folds s onto one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func newFeedbackCmd() *cobra.Command {
	var req ipc.FeedbackRequest
	cmd := &cobra.Command{
		Use:   "feedback REQUEST_ID up|down [--correction TEXT]",
		Short: "Rate a reply by its completion id (shown by `ruvllm conversations show`)",
		Long: "feedback stores a rating of one reply in the daemon, with the answer you wanted instead if given.\n" +
			"REQUEST_ID is the reply's completion id: the \"id\" of an OpenAI response, the request_id of an\n" +
			"Ollama response, or the X-Ruvllm-Request-Id header of either.",
		Args: exactArgs(2, "the request id and up or down"),
		RunE: func(cmd *cobra.Command, args []string) error {
			rating, err := parseRating(args[1])
			if err != nil {
				return err
			}
			req.RequestID, req.Rating = args[0], rating
			ctx := cmd.Context()
			c, err := connect(ctx, false)
			if err != nil {
				return err
			}
			defer c.Close()
			if req.ConversationID != "" && req.MessageID == "" {
				// Link the rating to the conversation's message of that reply.
				conv, err := c.Conversation(ctx, req.ConversationID)
				if err != nil {
					return err
				}
				for _, m := range conv.Messages {
					if m.RequestID == req.RequestID {
						req.MessageID = m.ID
					}
				}
				if req.MessageID == "" {
					return fmt.Errorf("conversation %s has no reply %s", req.ConversationID, req.RequestID)
				}
			}
			fb, err := c.SendFeedback(ctx, req)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: rated %s %s (%s)\n", fb.ID, fb.RequestID, args[1], fb.Model)
			if l := fb.Learning; l != nil {
				fmt.Fprintln(cmd.OutOrStdout(), learningLine(l))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Correction, "correction", "", "the answer you wanted instead")
	f.StringVar(&req.Comment, "comment", "", "a note on the rating")
	f.StringVar(&req.ConversationID, "conversation", "", "the conversation `ID` the reply belongs to")
	f.StringVar(&req.MessageID, "message", "", "the message `ID` of the reply in that conversation (default: found by REQUEST_ID)")
	return cmd
}

// parseRating reads up/down (or +1/-1, good/bad) as the API's ±1.
func parseRating(s string) (int, error) {
	switch strings.ToLower(s) {
	case "up", "good", "+1", "1":
		return 1, nil
	case "down", "bad", "-1":
		return -1, nil
	}
	return 0, fmt.Errorf("rating %q: want up or down", s)
}

// learningLine says what learning made of a rating.
func learningLine(l *ipc.FeedbackLearning) string {
	switch {
	case l.Status == ipc.LearnApplied:
		return fmt.Sprintf("learned in %.0f ms: scope %s is at version %d", l.LatencyMillis, l.Scope, l.Version)
	case l.Error != "":
		return fmt.Sprintf("learning: %s: %s", l.Status, l.Error)
	}
	return "learning: " + l.Status
}
