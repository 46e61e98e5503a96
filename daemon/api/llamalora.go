package api

import (
	"fmt"
	"net/http"
	"sort"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/ipc"
)

// llama-server numbers its adapters (the --lora files, in order) and a
// request's "lora" applies them by number. ruvllm's adapters are named and
// installed while the daemon runs; GET /lora-adapters numbers them in the
// order they were installed, so an adapter keeps its id while others are
// added (removing one moves the ids of those installed after it).

// checkLlamaLora checks a request's "lora" before the adapters are known.
func checkLlamaLora(entries []ipc.LlamaLora, adapters []ipc.AdapterRef) error {
	if len(entries) == 0 {
		return nil
	}
	if len(adapters) > 0 {
		return badParam("lora", "a request names its adapters by \"lora\" (ids) or \"adapters\" (names), not both")
	}
	if len(entries) > MaxAdaptersPerRequest {
		return badParam("lora", "may list at most %d adapters, not %d", MaxAdaptersPerRequest, len(entries))
	}
	seen := make(map[int]bool, len(entries))
	for i, e := range entries {
		at := fmt.Sprintf("lora[%d]", i)
		switch {
		case e.ID == nil:
			return badParam(at+".id", "is required (GET /lora-adapters lists the ids)")
		case *e.ID < 0:
			return badParam(at+".id", "must not be negative, not %d", *e.ID)
		case seen[*e.ID]:
			return badParam(at+".id", "lists adapter %d a second time", *e.ID)
		}
		seen[*e.ID] = true
		if e.Scale != nil {
			if err := checkAdapterScale(*e.Scale, at+".scale"); err != nil {
				return err
			}
		}
	}
	return nil
}

// llamaLoraAdapters lists the installed adapters with their ids.
func (a *API) llamaLoraAdapters() []ipc.LlamaLoraAdapter {
	pool := a.adapterPool()
	if pool == nil {
		return []ipc.LlamaLoraAdapter{}
	}
	list := pool.List()
	sort.SliceStable(list, func(i, j int) bool { return list[i].InstalledAt.Before(list[j].InstalledAt) })
	out := make([]ipc.LlamaLoraAdapter, len(list))
	for i, info := range list {
		out[i] = ipc.LlamaLoraAdapter{ID: i, Name: info.Name, Path: info.File}
	}
	return out
}

// llamaLoraRefs turns a request's "lora" into the adapters it applies: the
// listed ones whose scale is not zero.
func (a *API) llamaLoraRefs(entries []ipc.LlamaLora) ([]ipc.AdapterRef, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	ids := a.llamaLoraAdapters()
	var refs []ipc.AdapterRef
	for i, e := range entries {
		if *e.ID >= len(ids) {
			return nil, badParam(fmt.Sprintf("lora[%d].id", i), "no adapter has id %d: %d are installed (GET /lora-adapters lists them)", *e.ID, len(ids))
		}
		if e.Scale == nil || *e.Scale == 0 {
			continue // llama-server: a scale of 0 leaves the adapter out
		}
		refs = append(refs, ipc.AdapterRef{Name: ids[*e.ID].Name, Scale: *e.Scale})
	}
	return refs, nil
}

// loraAsAdapters turns an OpenAI body's llama-server "lora" into the
// adapters it names.
func (a *API) loraAsAdapters(f *ipc.SamplingFields) error {
	if len(f.Lora) == 0 {
		return nil
	}
	if err := checkLlamaLora(f.Lora, f.Adapters); err != nil {
		return err
	}
	refs, err := a.llamaLoraRefs(f.Lora)
	f.Adapters, f.Lora = refs, nil
	return err
}

// llamaGetLora answers GET /lora-adapters.
func (a *API) llamaGetLora(w http.ResponseWriter, r *http.Request) {
	daemon.WriteJSON(w, http.StatusOK, a.llamaLoraAdapters())
}

// llamaPostLora answers POST /lora-adapters, which in llama-server sets the
// scales every request gets. One daemon serves every app, so one app does
// not change another's adapters: the scales are set per request.
func (a *API) llamaPostLora(w http.ResponseWriter, r *http.Request) {
	openAIError(w, &requestError{status: http.StatusBadRequest,
		msg: "adapters are applied per request here (the daemon is shared by every app): send \"lora\": [{\"id\": ..., \"scale\": ...}] with each request (GET /lora-adapters lists the ids)"})
}
