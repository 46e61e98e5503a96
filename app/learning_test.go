package app

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestLearningMethods: a correction sent from the app is learned (the
// feedback says so), Learning shows the app's scope, the actions change
// it and ExportLearning writes a GGUF file.
func TestLearningMethods(t *testing.T) {
	a, rec, _ := startApp(t)
	conv, err := a.CreateConversation("")
	if err != nil {
		t.Fatal(err)
	}
	greedy(t, a, conv.ID, 6)
	from := rec.len()
	if _, err := a.SendMessage(conv.ID, "What is a pipe?"); err != nil {
		t.Fatal(err)
	}
	e, _ := rec.wait(t, from, ended(conv.ID))
	done := e.data.(ChatDone)
	fb, err := a.SendFeedback(conv.ID, done.Message.ID, -1, "A pipe joins programs.")
	if err != nil {
		t.Fatal(err)
	}
	if fb.Learning == nil || (fb.Learning.Status != ipc.LearnApplied && fb.Learning.Status != ipc.LearnQueued) || fb.Learning.RequestID != done.CompletionID {
		t.Fatalf("feedback learning %+v", fb.Learning)
	}
	var scope ipc.LearningScope
	for deadline := time.Now().Add(60 * time.Second); ; {
		st, err := a.Learning()
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Models) == 1 && len(st.Models[0].Scopes) == 1 && st.Models[0].Scopes[0].Applied == 1 && st.Models[0].Scopes[0].Unlearned == 0 {
			scope = st.Models[0].Scopes[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("learning status %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if scope.Scope != "user" || !scope.CanUndo || len(scope.History) != 1 {
		t.Fatalf("scope %+v", scope)
	}
	path := filepath.Join(t.TempDir(), "learned.gguf")
	if got, err := a.ExportLearning(path); err != nil || got != path {
		t.Fatalf("export: %q %v", got, err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b[:4]) != "GGUF" {
		t.Fatalf("exported file: %v", err)
	}
	res, err := a.LearningAction("pause")
	if err != nil || len(res.Scopes) != 1 || !res.Scopes[0].Paused {
		t.Fatalf("pause: %+v %v", res, err)
	}
	if res, err = a.LearningAction("resume"); err != nil || res.Scopes[0].Paused {
		t.Fatalf("resume: %+v %v", res, err)
	}
	if _, err := a.LearningAction("forget"); err == nil {
		t.Fatal("unknown action accepted")
	}
}
