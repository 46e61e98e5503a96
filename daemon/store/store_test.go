package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/ipc"
)

func TestPutGetListDelete(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type rec struct{ A int }
	if err := db.Put("things", "x", rec{1}); err != nil {
		t.Fatal(err)
	}
	var got rec
	if err := db.Get("things", "x", &got); err != nil || got.A != 1 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if err := db.Get("things", "missing", &got); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing key: %v", err)
	}
	n := 0
	db.List("things", func(string, []byte) error { n++; return nil })
	if n != 1 {
		t.Fatalf("List saw %d keys", n)
	}
	db.Delete("things", "x")
	if err := db.Get("things", "x", &got); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

func TestSecondOpenIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if runtimeAllowsSecondLock(path) {
		t.Fatal("a second open of a locked state.db succeeded")
	}
}

// runtimeAllowsSecondLock opens path from a child process (flock is per
// open file description, so a second process is the honest test).
func runtimeAllowsSecondLock(path string) bool {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOpen$")
	cmd.Env = append(os.Environ(), "STORE_HELPER_OPEN="+path)
	return cmd.Run() == nil
}

func TestHelperOpen(t *testing.T) {
	path := os.Getenv("STORE_HELPER_OPEN")
	if path == "" {
		t.Skip("helper process only")
	}
	db, err := Open(path)
	if err != nil {
		os.Exit(3)
	}
	db.Close()
}

func TestRequestLogCapAndOrder(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.maxRecords = 5
	for i := 0; i < 12; i++ {
		if err := db.LogRequest(context.Background(), ipc.RequestRecord{ID: strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := db.RecentRequests(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 5 || recs[0].ID != "11" || recs[4].ID != "7" {
		t.Fatalf("log = %v, want ids 11..7", recs)
	}
}

// TestKillNineLosesNothingCommitted runs a writer process that prints each
// record id after its transaction commits, kills it with SIGKILL at a
// random moment, and checks the file is consistent and holds every printed
// id.
func TestKillNineLosesNothingCommitted(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for round := 0; round < 3; round++ {
		path := filepath.Join(t.TempDir(), "state.db")
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$")
		cmd.Env = append(os.Environ(), "STORE_HELPER_WRITER="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		committed := map[string]bool{}
		sc := bufio.NewScanner(out)
		deadline := time.After(time.Duration(50+r.IntN(300)) * time.Millisecond)
	read:
		for sc.Scan() {
			committed[sc.Text()] = true
			select {
			case <-deadline:
				break read
			default:
			}
		}
		cmd.Process.Kill()
		for sc.Scan() { // ids printed before the kill landed
			committed[sc.Text()] = true
		}
		cmd.Wait()
		if len(committed) == 0 {
			t.Fatal("writer committed nothing before the kill")
		}
		db, err := Open(path)
		if err != nil {
			t.Fatalf("round %d: reopen after kill -9: %v", round, err)
		}
		if err := db.Check(); err != nil {
			t.Fatalf("round %d: consistency check: %v", round, err)
		}
		recs, err := db.RecentRequests(context.Background(), 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, r := range recs {
			have[r.ID] = true
		}
		for id := range committed {
			if !have[id] {
				t.Fatalf("round %d: committed record %s lost", round, id)
			}
		}
		db.Close()
		t.Logf("round %d: %d committed records survived SIGKILL", round, len(committed))
	}
}

func TestHelperWriter(t *testing.T) {
	path := os.Getenv("STORE_HELPER_WRITER")
	if path == "" {
		t.Skip("helper process only")
	}
	db, err := Open(path)
	if err != nil {
		os.Exit(3)
	}
	w := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		id := fmt.Sprintf("req-%d", i)
		if err := db.LogRequest(context.Background(), ipc.RequestRecord{ID: id, Model: "m", PromptTokens: i}); err != nil {
			os.Exit(4)
		}
		if err := db.Put(Settings, "last", i); err != nil {
			os.Exit(4)
		}
		fmt.Fprintln(w, id)
		w.Flush()
	}
}
