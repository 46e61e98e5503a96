package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestDeleteFineTunedModel: DELETE /api/delete of a fine-tuning job's
// model (ft:<model>:<suffix>:<id>, served from its adapter) removes it; it
// answered 200 and the model stayed listed and usable.
func TestDeleteFineTunedModel(t *testing.T) {
	ta := startAPIWith(t, true)
	base := realTinyModel(t)
	dir := t.TempDir()
	pool := withAdapterPool(t, ta, base, dir)
	src := randomAdapter(t, base, dir, "job", 1, 0)
	const name = "ft:tiny-real::abc123"
	if _, err := pool.InstallFineTuned(context.Background(), src, name, base, "tiny-real", nil); err != nil {
		t.Fatal(err)
	}
	if code, b := ta.get(t, "/v1/models/"+name); code != 200 {
		t.Fatalf("the fine-tuned model is not listed: %d %s", code, b)
	}
	req, _ := http.NewRequest(http.MethodDelete, "http://ruvllm/api/delete", strings.NewReader(`{"model":"`+name+`"}`))
	resp, err := ta.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	if code, _ := ta.get(t, "/v1/models/"+name); code != 404 {
		t.Fatalf("after the delete the model is still listed (%d)", code)
	}
	if _, ok := pool.Get(name); ok {
		t.Fatal("after the delete its adapter is still installed")
	}
}

// TestTagsListFineTunedModels: /api/tags lists fine-tuning jobs' models as
// /v1/models does (they were missing, so `ollama list` did not show a
// model every endpoint serves).
func TestTagsListFineTunedModels(t *testing.T) {
	ta := startAPIWith(t, true)
	base := realTinyModel(t)
	dir := t.TempDir()
	pool := withAdapterPool(t, ta, base, dir)
	const name = "ft:tiny-real::abc123"
	if _, err := pool.InstallFineTuned(context.Background(), randomAdapter(t, base, dir, "job", 1, 0), name, base, base, nil); err != nil {
		t.Fatal(err)
	}
	code, b := ta.get(t, "/api/tags")
	if code != 200 || !strings.Contains(string(b), `"name":"`+name+`"`) {
		t.Fatalf("/api/tags: %d %s", code, b)
	}
}
