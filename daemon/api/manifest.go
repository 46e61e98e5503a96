package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/daemon/adapters"
	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/quantize"
	"github.com/ruvllm/ruvllm/internal/disk"
	"github.com/ruvllm/ruvllm/ipc"
)

// ManifestBucket is the state-store bucket of created models.
const ManifestBucket = "manifests"

// maxManifestDepth bounds a chain of models made from models.
const maxManifestDepth = 8

// MaxBlobBytes bounds one uploaded blob (a GGUF model or adapter).
const MaxBlobBytes = 512 << 30

// modelNameRE is Ollama's model name: [host/][namespace/]model[:tag] of a
// fixed character set.
var modelNameRE = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]{0,63}/){0,2}[A-Za-z0-9][A-Za-z0-9._-]{0,79}(:[A-Za-z0-9][A-Za-z0-9._-]{0,63})?$`)

// canonicalName is how a model name is stored and compared: lower case,
// without Ollama's default ":latest" tag.
func canonicalName(name string) string {
	return strings.TrimSuffix(strings.ToLower(name), ":latest")
}

// checkModelName refuses names outside Ollama's form.
func checkModelName(param, name string) error {
	if name == "" {
		return badParam(param, "is required")
	}
	if !modelNameRE.MatchString(name) {
		return badParam(param, "%q is not a model name: [host/][namespace/]model[:tag] of letters, digits, '.', '_' and '-'", name)
	}
	return nil
}

// manifest returns the created model named name, if there is one.
func (a *API) manifest(name string) (*ipc.ModelManifest, bool) {
	if name == "" {
		return nil, false
	}
	var m ipc.ModelManifest
	if err := a.srv.Store().Get(ManifestBucket, canonicalName(name), &m); err != nil {
		return a.fineTunedManifest(canonicalName(name))
	}
	return &m, true
}

// resolvedModel is a request's model after created models are expanded:
// the base model to run and, when the name was a created model, the
// defaults of its chain merged (the nearest winning).
type resolvedModel struct {
	base string
	man  *ipc.ModelManifest
}

// alias is the name responses show for a request that named requested: a
// created model's own name, "" (the model that runs) for any other.
func (rm resolvedModel) alias(requested string) string {
	if rm.man == nil {
		return ""
	}
	return requested
}

// psName is the name /api/ps and /v1/health give a model that a request
// for the created model alias (rm.alias) loads: its name as /api/tags
// lists it, tagged; "" (the model's own) for no alias.
func psName(alias string) string {
	if alias == "" {
		return ""
	}
	n := canonicalName(alias)
	if !strings.Contains(n, ":") {
		n += ":latest"
	}
	return n
}

// shown is the name a response shows for a request that named requested
// and ran on the model named served: a created model's own name, else
// served.
func (rm resolvedModel) shown(requested, served string) string {
	if alias := rm.alias(requested); alias != "" {
		return alias
	}
	return served
}

// resolveModel follows created models down to a model the manager serves.
func (a *API) resolveModel(name string) (resolvedModel, error) {
	var chain []*ipc.ModelManifest
	cur := name
	for {
		m, ok := a.manifest(cur)
		if !ok {
			break
		}
		if len(chain) == maxManifestDepth {
			return resolvedModel{}, badParam("model", "%q is made from more than %d models in a chain", name, maxManifestDepth)
		}
		chain = append(chain, m)
		cur = m.From
	}
	if len(chain) == 0 {
		return resolvedModel{base: name}, nil
	}
	if filepath.IsAbs(cur) {
		if _, err := os.Stat(cur); errors.Is(err, fs.ErrNotExist) {
			// A blob removed outside the daemon: say which model lost
			// what, not "model not found" of a blob's path.
			return resolvedModel{}, &requestError{status: http.StatusNotFound,
				msg: fmt.Sprintf("model %q: its weights file %s is gone (removed outside the daemon?); create the model again", name, cur)}
		}
	}
	merged := &ipc.ModelManifest{Name: chain[0].Name, From: cur, Parameters: map[string]any{}, Created: chain[0].Created}
	for i := len(chain) - 1; i >= 0; i-- { // the base's first, the nearest last
		overlayManifest(merged, chain[i])
	}
	return resolvedModel{base: cur, man: merged}, nil
}

// overlayManifest applies m's settings on top of dst's (whose Parameters
// must not be nil): what m sets wins, parameters merge, adapters add up.
func overlayManifest(dst, m *ipc.ModelManifest) {
	if m.System != "" {
		dst.System = m.System
	}
	if m.Template != "" {
		dst.Template = m.Template
	}
	maps.Copy(dst.Parameters, m.Parameters)
	dst.Adapters = append(dst.Adapters, m.Adapters...)
	if len(m.Messages) > 0 {
		dst.Messages = m.Messages
	}
	if len(m.License) > 0 {
		dst.License = m.License
	}
}

// withManifestOptions overlays a request's Ollama options on a created
// model's parameters (the request's own values win).
func withManifestOptions(man *ipc.ModelManifest, o *ipc.OllamaOptions) (*ipc.OllamaOptions, error) {
	if man == nil || len(man.Parameters) == 0 {
		return o, nil
	}
	merged := map[string]any{}
	maps.Copy(merged, man.Parameters)
	if o != nil {
		b, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		var req map[string]any
		if err := json.Unmarshal(b, &req); err != nil {
			return nil, err
		}
		maps.Copy(merged, req)
	}
	b, err := json.Marshal(merged)
	if err != nil {
		return nil, err
	}
	var out ipc.OllamaOptions
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, badParam("options", "the model's parameters do not decode: %v", err)
	}
	// An explicit empty stop list (which omitempty left out of the JSON
	// above) replaces the model's, as in Ollama's merge of options over
	// the Modelfile's; null or none keeps them.
	if o != nil && o.Stop != nil {
		out.Stop = o.Stop
	}
	return &out, nil
}

// withManifestSampling fills a request's unset OpenAI sampling fields from
// a created model's parameters.
func withManifestSampling(man *ipc.ModelManifest, f *ipc.SamplingFields) {
	if man == nil {
		return
	}
	// A created model's adapters apply whether or not it has parameters.
	f.Adapters = mergeAdapters(man.Adapters, f.Adapters)
	o, err := withManifestOptions(man, nil)
	if err != nil || o == nil {
		return
	}
	if f.Temperature == nil {
		f.Temperature = o.Temperature
	}
	if f.TopP == nil {
		f.TopP = o.TopP
	}
	if f.TopK == nil {
		f.TopK = o.TopK
	}
	if f.MinP == nil {
		f.MinP = o.MinP
	}
	if f.Seed == nil {
		f.Seed = o.Seed
	}
	if f.PresencePenalty == 0 {
		f.PresencePenalty = o.PresencePenalty
	}
	if f.FrequencyPenalty == 0 {
		f.FrequencyPenalty = o.FrequencyPenalty
	}
	if f.RepeatPenalty == 0 && o.RepeatPenalty != nil {
		f.RepeatPenalty = *o.RepeatPenalty
	}
	if f.Stop == nil { // an explicit [] is no stop strings
		f.Stop = o.Stop
	}
	if f.MaxTokens == 0 && f.MaxCompletion == 0 && o.NumPredict != nil && *o.NumPredict > 0 {
		f.MaxTokens = *o.NumPredict
	}
}

// withManifestLlama fills a llama-server /completion or /infill request's
// unset sampling fields from a created model's parameters, as
// withManifestSampling does for OpenAI's: what the request sets wins, and
// llama-server's defaults fill what neither sets.
func withManifestLlama(man *ipc.ModelManifest, b *ipc.LlamaCompletionRequest) error {
	if man == nil {
		return nil
	}
	o, err := withManifestOptions(man, nil)
	if err != nil || o == nil {
		return err
	}
	fill := func(dst **float32, v *float32) {
		if *dst == nil {
			*dst = v
		}
	}
	fill(&b.Temperature, o.Temperature)
	fill(&b.TopP, o.TopP)
	fill(&b.MinP, o.MinP)
	fill(&b.TypicalP, o.TypicalP)
	fill(&b.RepeatPenalty, o.RepeatPenalty)
	if b.TopK == nil {
		b.TopK = o.TopK
	}
	if b.RepeatLastN == nil {
		b.RepeatLastN = o.RepeatLastN
	}
	if b.PresencePenalty == 0 {
		b.PresencePenalty = o.PresencePenalty
	}
	if b.FrequencyPenalty == 0 {
		b.FrequencyPenalty = o.FrequencyPenalty
	}
	if b.Seed == nil {
		b.Seed = o.Seed
	}
	if b.Stop == nil { // an explicit [] is no stop strings
		b.Stop = o.Stop
	}
	// num_predict -1 and -2 mean what n_predict's do; 0 is the default
	// (no limit) for Ollama but "the prompt only" for llama-server.
	if b.NPredict == nil && b.MaxTokens == nil && o.NumPredict != nil && *o.NumPredict != 0 {
		b.NPredict = o.NumPredict
	}
	return nil
}

// withManifestRequest applies a created model's settings to a chat request
// an API built as an engine request (Anthropic's Messages): its parameters
// where the request left them (setTemp, setTopP and setTopK say which it
// set), its system prompt unless the request has one, its MESSAGE turns
// after the system prompt, and its prompt template. Its adapters are the
// caller's (manifestAdapters).
func withManifestRequest(man *ipc.ModelManifest, req *llm.Request, setTemp, setTopP, setTopK bool) error {
	if man == nil {
		return nil
	}
	o, err := withManifestOptions(man, nil)
	if err != nil {
		return err
	}
	if o != nil {
		p := &req.Sampling
		if o.Temperature != nil && !setTemp {
			p.Temperature = *o.Temperature
		}
		if o.TopP != nil && !setTopP {
			p.TopP = *o.TopP
		}
		if o.TopK != nil && !setTopK {
			p.TopK = *o.TopK
		}
		if o.MinP != nil && p.MinP == 0 {
			p.MinP = *o.MinP
		}
		if o.TypicalP != nil && p.TypicalP == 0 {
			p.TypicalP = *o.TypicalP
		}
		if o.RepeatPenalty != nil && p.RepeatPenalty == 0 {
			p.RepeatPenalty = *o.RepeatPenalty
		}
		if o.RepeatLastN != nil && p.RepeatLastN == 0 {
			p.RepeatLastN = *o.RepeatLastN
		}
		if p.PresencePenalty == 0 {
			p.PresencePenalty = o.PresencePenalty
		}
		if p.FrequencyPenalty == 0 {
			p.FrequencyPenalty = o.FrequencyPenalty
		}
		if o.Seed != nil && *o.Seed >= 0 && !p.Seeded {
			p.Seed, p.Seeded = uint64(*o.Seed), true
		}
		if req.Stop == nil { // an explicit [] is no stop strings
			req.Stop = o.Stop
		}
	}
	n := 0 // the request's leading system messages
	for n < len(req.Messages) && req.Messages[n].Role == chat.RoleSystem {
		n++
	}
	var pre []chat.Message
	if man.System != "" && n == 0 {
		pre = append(pre, chat.Message{Role: chat.RoleSystem, Content: man.System})
	}
	for _, m := range man.Messages {
		pre = append(pre, chat.Message{Role: m.Role, Content: m.Content})
	}
	if len(pre) > 0 {
		req.Messages = slices.Concat(req.Messages[:n], pre, req.Messages[n:])
	}
	return setManifestTemplate(man, req)
}

// setManifestTemplate makes a created model's TEMPLATE, when it has one,
// the renderer of req's chat.
func setManifestTemplate(man *ipc.ModelManifest, req *llm.Request) error {
	t, err := manifestTemplate(man)
	if err != nil {
		return err
	}
	if t != nil {
		req.Template = t
	}
	return nil
}

// mergeAdapters puts a created model's adapters before the request's; an
// adapter the request names itself keeps the request's scale.
func mergeAdapters(base, req []ipc.AdapterRef) []ipc.AdapterRef {
	if len(base) == 0 {
		return req
	}
	out := make([]ipc.AdapterRef, 0, len(base)+len(req))
	for _, b := range base {
		if !slices.ContainsFunc(req, func(r ipc.AdapterRef) bool { return r.Name == b.Name }) {
			out = append(out, b)
		}
	}
	return append(out, req...)
}

// withManifestMessages adds a created model's system prompt (unless the
// request starts with one) and its MESSAGE turns before the request's
// messages.
func withManifestMessages(man *ipc.ModelManifest, msgs []ipc.Message) []ipc.Message {
	if man == nil || (man.System == "" && len(man.Messages) == 0) {
		return msgs
	}
	var out []ipc.Message
	// As Ollama: the model's SYSTEM comes first unless the chat starts
	// with a system message of its own (one later in the chat is joined
	// to it, as templates see system messages).
	hasSystem := len(msgs) > 0 && (msgs[0].Role == "system" || msgs[0].Role == "developer")
	if man.System != "" && !hasSystem {
		out = append(out, ipc.Message{Role: "system", Content: man.System})
	}
	out = append(out, man.Messages...)
	return append(out, msgs...)
}

// ollamaCreate answers POST /api/create.
func (a *API) ollamaCreate(w http.ResponseWriter, r *http.Request) {
	var body ipc.CreateRequest
	if err := decode(r, &body); err != nil {
		ollamaError(w, err)
		return
	}
	if body.Model == "" {
		body.Model = body.Name
	}
	if err := checkModelName("model", body.Model); err != nil {
		ollamaError(w, err)
		return
	}
	var modelfileAdapters []string
	if body.Modelfile != "" {
		mf, adapters, err := parseModelfile(body.Modelfile)
		if err != nil {
			ollamaError(w, badParam("modelfile", "%v", err))
			return
		}
		// Fields given beside the Modelfile win over it.
		if body.From == "" {
			body.From = mf.From
		}
		if body.System == "" {
			body.System = mf.System
		}
		if body.Template == "" {
			body.Template = mf.Template
		}
		if body.Parameters == nil {
			body.Parameters = mf.Parameters
		}
		if len(body.Messages) == 0 {
			body.Messages = mf.Messages
		}
		if body.License == nil {
			body.License = mf.License
		}
		modelfileAdapters = adapters
	}
	stream := body.Stream == nil || *body.Stream
	nd := &ndjson{w: w}
	progress := func(p ipc.ProgressStatus) {
		if stream {
			nd.send(p)
		}
	}
	man, err := a.buildManifest(r.Context(), body, modelfileAdapters, progress)
	if err == nil {
		err = a.srv.Store().Put(ManifestBucket, man.Name, man)
	}
	if err != nil {
		if nd.started {
			nd.send(ipc.ProgressStatus{Error: err.Error()})
		} else {
			ollamaError(w, err)
		}
		return
	}
	a.log.Info("model created", "model", man.Name, "from", man.From)
	a.srv.Events().Publish("model.created", map[string]any{"model": man.Name, "from": man.From})
	if stream {
		nd.send(ipc.ProgressStatus{Status: "success"})
		return
	}
	daemon.WriteJSON(w, http.StatusOK, ipc.ProgressStatus{Status: "success"})
}

// buildManifest checks a create request and turns it into a manifest.
func (a *API) buildManifest(ctx context.Context, body ipc.CreateRequest, modelfileAdapters []string, progressStatus func(ipc.ProgressStatus)) (*ipc.ModelManifest, error) {
	name := canonicalName(body.Model)
	progress := func(s string) { progressStatus(ipc.ProgressStatus{Status: s}) }
	if _, err := a.models.Resolve(name); err == nil {
		if _, isManifest := a.manifest(name); !isManifest {
			return nil, &requestError{status: http.StatusConflict, param: "model",
				msg: fmt.Sprintf("a model file named %q exists: pick another name for the new model", name)}
		}
	}
	man := &ipc.ModelManifest{Name: name, System: body.System, Template: body.Template, Created: time.Now().UTC()}
	// The base: a model name, a GGUF file on this machine, or an uploaded blob.
	from := body.From
	if len(body.Files) > 0 {
		if from != "" {
			return nil, badParam("files", "give either from or files, not both")
		}
		if len(body.Files) != 1 {
			return nil, badParam("files", "must name exactly one GGUF file (split models are not supported)")
		}
		for fname, digest := range body.Files {
			p, err := a.blobPath(digest)
			if err != nil {
				return nil, badParam("files."+fname, "%v", err)
			}
			if _, err := os.Stat(p); err != nil {
				return nil, badParam("files."+fname, "blob %s was not uploaded (POST /api/blobs/%s first)", digest, digest)
			}
			from = p
		}
	}
	if from == "" {
		return nil, badParam("from", "is required: a model name, a GGUF file path, or files")
	}
	switch {
	case strings.HasSuffix(strings.ToLower(from), ".gguf") || filepath.IsAbs(from) || strings.Contains(from, "sha256-"):
		abs, err := filepath.Abs(from)
		if err != nil {
			return nil, badParam("from", "%v", err)
		}
		f, err := gguf.Open(abs)
		if err != nil {
			if errors.Is(err, gguf.ErrNotGGUF) {
				return nil, badParam("from", "names %s, which is not a GGUF file", abs)
			}
			return nil, badParam("from", "%s: %v", abs, err)
		}
		kind, _ := f.String("general.type")
		f.Close()
		if kind == "adapter" {
			// Every request to the created model would fail to load it.
			return nil, badParam("from", "%s is a LoRA adapter, not a model: name a base model in from and the adapter in ADAPTER (or adapters)", abs)
		}
		man.From = abs
	default:
		_, made := a.manifest(from)
		if !made && canonicalName(from) == name {
			return nil, badParam("from", "a model cannot be made from itself")
		}
		if !made {
			if _, err := a.models.Resolve(from); err != nil {
				return nil, badParam("from", "no model named %q (see GET /api/tags)", from)
			}
		}
		man.From = canonicalName(from)
	}
	// The model named in from, its chain of created (or fine-tuned) models
	// resolved once: its file is quantized, its adapters count against the
	// bound, and its settings are copied.
	var fromChain resolvedModel
	if !filepath.IsAbs(man.From) {
		var err error
		if fromChain, err = a.resolveModel(man.From); err != nil {
			return nil, err
		}
	}
	// quantize: the base's weights converted (checked now, done last).
	var qopts quantize.Options
	var qbase string
	if body.Quantize != "" {
		qbase = man.From
		if !filepath.IsAbs(qbase) {
			var err error
			if qbase, err = a.models.Resolve(fromChain.base); err != nil {
				return nil, badParam("from", "%v", err)
			}
		}
		var err error
		if qopts, err = quantizePlan(qbase, body.Quantize); err != nil {
			return nil, err
		}
	}
	if err := checkParameters(body.Parameters); err != nil {
		return nil, err
	}
	man.Parameters = body.Parameters
	if o, err := withManifestOptions(man, nil); err != nil {
		return nil, err
	} else if _, err := ollamaRequest(o); err != nil {
		return nil, err
	}
	if man.Template != "" {
		t, err := parseGoTemplate(man.Template)
		if err != nil {
			return nil, badParam("template", "%v", err)
		}
		// Rendered once on a sample conversation: a field the template
		// data has not (a misspelling) fails every request, which then
		// blamed the request's model.
		sample := chat.Conversation{Messages: []chat.Message{{Role: chat.RoleSystem, Content: "You are helpful."}, {Role: "user", Content: "Hi"}}, AddGenerationPrompt: true}
		if _, err := t.Prompt(context.Background(), sample); err != nil {
			return nil, badParam("template", "%v", err)
		}
	}
	for i, m := range body.Messages {
		if _, err := checkRole(m.Role, i, "messages"); err != nil {
			return nil, err
		}
		// Every request would carry them and fail (no model here reads
		// images).
		if len(m.Images) > 0 {
			return nil, badParam(fmt.Sprintf("messages[%d].images", i), "images are not supported: the models served here take text only")
		}
	}
	man.Messages = body.Messages
	switch l := body.License.(type) {
	case string:
		man.License = []string{l}
	case []string:
		man.License = l
	case []any:
		for _, x := range l {
			man.License = append(man.License, fmt.Sprint(x))
		}
	}
	// Adapters: files named by a Modelfile, or uploaded blobs, installed
	// into the adapter pool under names of the new model.
	var paths []string
	paths = append(paths, modelfileAdapters...)
	for _, fname := range slices.Sorted(maps.Keys(body.Adapters)) {
		digest := body.Adapters[fname]
		p, err := a.blobPath(digest)
		if err != nil {
			return nil, badParam("adapters."+fname, "%v", err)
		}
		if _, err := os.Stat(p); err != nil {
			// As for files: the digest the client gave, not the blob's
			// path in the models directory (an lstat error of it).
			return nil, badParam("adapters."+fname, "blob %s was not uploaded (POST /api/blobs/%s first)", digest, digest)
		}
		paths = append(paths, p)
	}
	// A request applies the adapters of the whole chain (those of the
	// model this one is made from first), so the chain is held to a
	// request's bounds here: a model over them was created, then refused
	// every request with an error about adapters it had not named.
	var inherited []ipc.AdapterRef
	if fromChain.man != nil {
		inherited = fromChain.man.Adapters
	}
	if len(inherited)+len(paths) > MaxAdaptersPerRequest {
		return nil, badParam("adapters", "a model may carry at most %d adapters, with those of the model it is made from (%d)", MaxAdaptersPerRequest, len(inherited))
	}
	pool := a.adapterPool()
	// byName says whether paths[i] names an installed adapter: an ADAPTER
	// that does (as /api/show's Modelfile writes a created model's) refers
	// to it; a path is installed.
	byName := func(i int) (ipc.AdapterInfo, bool) {
		p := paths[i]
		if pool == nil || i >= len(modelfileAdapters) || strings.ContainsAny(p, `/\`) {
			return ipc.AdapterInfo{}, false
		}
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			return ipc.AdapterInfo{}, false
		}
		return pool.Get(p)
	}
	seen := map[string]bool{}
	for _, ref := range inherited {
		seen[ref.Name] = true
	}
	for i := range paths {
		if info, ok := byName(i); ok {
			if seen[info.Name] {
				return nil, badParam("adapters", "would apply %q twice (the model it is made from, or an earlier ADAPTER, has it)", info.Name)
			}
			seen[info.Name] = true
		}
	}
	for i, p := range paths {
		if pool == nil {
			return nil, badParam("adapters", "adapter support is not available in this daemon")
		}
		if info, ok := byName(i); ok {
			man.Adapters = append(man.Adapters, ipc.AdapterRef{Name: info.Name})
			continue
		}
		progress("installing adapter " + filepath.Base(p))
		info, err := pool.InstallFor(ctx, p, fmt.Sprintf("%s%d", ownAdapterPrefix(name), i+1), name)
		if err != nil {
			return nil, &requestError{status: adaptersStatus(err), msg: fmt.Sprintf("adapter %s: %v", p, err), param: "adapters"}
		}
		man.Adapters = append(man.Adapters, ipc.AdapterRef{Name: info.Name})
	}
	// A model made from a created one (or a fine-tuned one) copies what
	// that model's chain sets, its own settings above on top, and is made
	// from the chain's base: as Ollama copies layers, deleting or
	// re-creating the other model later leaves this one as it was made.
	if fromChain.man != nil {
		inheritManifest(man, fromChain.man)
		man.From = fromChain.base
	}
	if body.Quantize != "" {
		blob, err := a.quantizeToBlob(ctx, qbase, qopts, progressStatus)
		if err != nil {
			return nil, err
		}
		man.From = blob
	}
	progress("writing manifest")
	return man, nil
}

// ollamaCopy answers POST /api/copy: the destination becomes a created
// model made from the source (weights are never copied).
func (a *API) ollamaCopy(w http.ResponseWriter, r *http.Request) {
	var body ipc.CopyRequest
	if err := decode(r, &body); err != nil {
		ollamaError(w, err)
		return
	}
	// The source need only name a model (a fine-tuned "ft:…" one, which
	// create's from takes, is outside Ollama's name form); the destination
	// becomes a created model's name.
	if err := firstError(required("source", body.Source), checkName("source", body.Source), checkModelName("destination", body.Destination)); err != nil {
		ollamaError(w, err)
		return
	}
	src, dst := canonicalName(body.Source), canonicalName(body.Destination)
	if src == dst {
		ollamaError(w, badParam("destination", "is the source"))
		return
	}
	if _, err := a.models.Resolve(dst); err == nil {
		if _, isManifest := a.manifest(dst); !isManifest {
			ollamaError(w, &requestError{status: http.StatusConflict, param: "destination", msg: fmt.Sprintf("a model file named %q exists", dst)})
			return
		}
	}
	rm, err := a.resolveModel(src)
	if err != nil {
		ollamaError(w, err)
		return
	}
	man := rm.man
	if man == nil {
		if _, err := a.models.Resolve(src); err != nil {
			ollamaError(w, &requestError{status: http.StatusNotFound, param: "source", msg: fmt.Sprintf("model %q not found", body.Source)})
			return
		}
		man = &ipc.ModelManifest{From: src}
	}
	man.Name, man.Created = dst, time.Now().UTC()
	if err := a.srv.Store().Put(ManifestBucket, dst, man); err != nil {
		ollamaError(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// ollamaPush answers POST /api/push: there is no registry to push to.
func (a *API) ollamaPush(w http.ResponseWriter, r *http.Request) {
	ollamaError(w, &requestError{status: http.StatusNotImplemented,
		msg: "pushing models is not supported: ruvllm serves local models only and has no registry to push to"})
}

var digestRE = regexp.MustCompile(`^sha256[:-]([0-9a-f]{64})$`)

// blobPath is where an uploaded blob of digest lives.
func (a *API) blobPath(digest string) (string, error) {
	m := digestRE.FindStringSubmatch(digest)
	if m == nil {
		return "", fmt.Errorf("%q is not a digest of the form sha256:<64 hex digits>", digest)
	}
	return filepath.Join(a.srv.Config().ModelsDir, "blobs", "sha256-"+m[1]), nil
}

// isBlob reports whether path is an uploaded blob (a created model's
// weights, loaded under the blob's file name): not a model of its own to
// list, as Ollama lists none of its blobs.
func (a *API) isBlob(path string) bool {
	return filepath.Dir(path) == filepath.Join(a.srv.Config().ModelsDir, "blobs")
}

// blobHead answers HEAD /api/blobs/{digest}: 200 when it was uploaded.
func (a *API) blobHead(w http.ResponseWriter, r *http.Request) {
	p, err := a.blobPath(r.PathValue("digest"))
	if err != nil {
		ollamaError(w, badParam("digest", "%v", err))
		return
	}
	if _, err := os.Stat(p); err != nil {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// blobPost answers POST /api/blobs/{digest}: the body is stored under its
// digest once it hashes to it (streamed to disk, within MaxBlobBytes and
// the free space).
func (a *API) blobPost(w http.ResponseWriter, r *http.Request) {
	digest := r.PathValue("digest")
	p, err := a.blobPath(digest)
	if err != nil {
		ollamaError(w, badParam("digest", "%v", err))
		return
	}
	if _, err := os.Stat(p); err == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	if r.ContentLength > MaxBlobBytes {
		ollamaError(w, &requestError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("a blob may be at most %d GiB", MaxBlobBytes>>30)})
		return
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		ollamaError(w, err)
		return
	}
	if err := disk.Check(dir, r.ContentLength); err != nil {
		ollamaError(w, &requestError{status: http.StatusInsufficientStorage, msg: err.Error()})
		return
	}
	tmp, err := disk.CreateTemp(dir, ".upload-*")
	if err != nil {
		ollamaError(w, err)
		return
	}
	defer os.Remove(tmp.Name())
	// Without a length (the ollama CLI streams the file chunked) Check
	// had nothing to weigh: the upload may take what leaves the margin
	// free, not fill the disk the state store and snapshots share.
	limit, room := int64(MaxBlobBytes), int64(-1)
	if r.ContentLength < 0 {
		if rm, ok := disk.Room(dir); ok && rm < limit {
			limit, room = rm, rm
		}
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(r.Body, limit+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	switch {
	case err == nil && room >= 0 && n > room:
		ollamaError(w, &requestError{status: http.StatusInsufficientStorage,
			msg: fmt.Sprintf("%v in %s: the upload outgrew the %d MiB that keep %d MiB free", disk.ErrNoSpace, dir, room>>20, int64(disk.Margin)>>20)})
		return
	case err != nil && disk.IsFull(err):
		ollamaError(w, &requestError{status: http.StatusInsufficientStorage, msg: fmt.Sprintf("%v: %v", disk.ErrNoSpace, err)})
		return
	case err != nil:
		ollamaError(w, &requestError{status: http.StatusBadRequest, msg: fmt.Sprintf("reading the upload: %v", err)})
		return
	case n > MaxBlobBytes:
		ollamaError(w, &requestError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("a blob may be at most %d GiB", MaxBlobBytes>>30)})
		return
	}
	if got := hex.EncodeToString(h.Sum(nil)); "sha256:"+got != strings.Replace(digest, "-", ":", 1) {
		ollamaError(w, badParam("digest", "the upload hashes to sha256:%s, not %s", got, digest))
		return
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		ollamaError(w, err)
		return
	}
	w.WriteHeader(http.StatusCreated)
}

// deleteManifest removes a created model; false when name is none.
func (a *API) deleteManifest(name string) (bool, error) {
	// One read of the store decides: reading the manifest, then reading
	// it again to tell a created model from a fine-tuning job's, took a
	// model deleted in between by a request at the same time for a job's,
	// whose adapter removal failed as a 500 ("unknown adapter").
	var stored ipc.ModelManifest
	if a.srv.Store().Get(ManifestBucket, canonicalName(name), &stored) != nil {
		// A fine-tuning job's model has no stored manifest: it is its
		// adapter (fineTunedManifest), which deleting the model removes.
		// (The store's delete of the absent key answered 200 and the
		// model stayed.)
		man, ok := a.fineTunedManifest(canonicalName(name))
		if !ok {
			return false, nil
		}
		if err := a.checkUnused(man.Name, ""); err != nil {
			return true, err
		}
		if err := a.adapterPool().Remove(man.Name); err != nil {
			if errors.Is(err, adapters.ErrUnknown) {
				return false, nil // removed at the same time: not found
			}
			return true, err
		}
		a.srv.Events().Publish("model.removed", map[string]any{"model": man.Name})
		return true, nil
	}
	if err := a.checkUnused(stored.Name, ""); err != nil {
		return true, err
	}
	if err := a.srv.Store().Delete(ManifestBucket, canonicalName(name)); err != nil {
		return true, err
	}
	a.pruneBlob(stored.From)
	a.pruneAdapters(stored)
	a.srv.Events().Publish("model.removed", map[string]any{"model": canonicalName(name)})
	return true, nil
}

// ownAdapterPrefix begins the names of the adapters /api/create installs
// for the model named name (its ADAPTER files and uploads).
func ownAdapterPrefix(name string) string {
	return strings.NewReplacer("/", "-", ":", "-").Replace(canonicalName(name)) + "-adapter-"
}

// pruneAdapters removes the adapters of a deleted model that /api/create
// installed (for it or a model it was made from: CreatedFor) and no other
// model is made with, as Ollama prunes a deleted model's layers; adapters
// installed on their own stay.
func (a *API) pruneAdapters(deleted ipc.ModelManifest) {
	pool := a.adapterPool()
	if pool == nil {
		return
	}
	for _, ref := range deleted.Adapters {
		if info, ok := pool.Get(ref.Name); !ok || info.CreatedFor == "" || len(a.AdapterUsers(ref.Name)) > 0 {
			continue
		}
		if err := pool.Remove(ref.Name); err != nil && !errors.Is(err, adapters.ErrUnknown) {
			a.log.Warn("pruning a deleted model's adapter", "adapter", ref.Name, "err", err)
			continue
		}
		a.log.Info("adapter pruned", "adapter", ref.Name, "model", deleted.Name)
	}
}

// pruneBlob removes path when it is a blob (an upload, or a quantized
// model's weights) that no created model is made from any more, as Ollama
// prunes layers on delete.
func (a *API) pruneBlob(path string) {
	dir := filepath.Join(a.srv.Config().ModelsDir, "blobs")
	if filepath.Dir(path) != dir || !strings.HasPrefix(filepath.Base(path), "sha256-") {
		return
	}
	for _, m := range a.manifests() {
		if m.From == path {
			return
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		a.log.Warn("pruning a blob", "blob", path, "err", err)
		return
	}
	a.log.Info("blob pruned", "blob", path)
}

// PruneBlobs removes uploaded blobs (POST /api/blobs) older than age that
// no created model is made from, as Ollama prunes unused layers at start:
// an upload never followed by /api/create stayed for ever. Younger ones
// are kept for a create that may still come. Call it once the adapter
// pool is set (fine-tuned models count). It returns the bytes freed.
func (a *API) PruneBlobs(age time.Duration) int64 {
	dir := filepath.Join(a.srv.Config().ModelsDir, "blobs")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	used := map[string]bool{}
	for _, m := range a.madeModels() {
		used[m.From] = true
	}
	var freed int64
	cutoff := time.Now().Add(-age)
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if !strings.HasPrefix(e.Name(), "sha256-") || used[p] {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || info.ModTime().After(cutoff) {
			continue
		}
		if os.Remove(p) == nil {
			freed += info.Size()
			a.log.Info("unused blob pruned", "blob", p, "bytes", info.Size())
		}
	}
	return freed
}

// manifests lists the created models.
func (a *API) manifests() []ipc.ModelManifest {
	var out []ipc.ModelManifest
	a.srv.Store().List(ManifestBucket, func(key string, value []byte) error {
		var m ipc.ModelManifest
		if json.Unmarshal(value, &m) == nil {
			out = append(out, m)
		}
		return nil
	})
	return out
}

// adaptersStatus maps an adapter install error to a status (a 4xx for
// the client's file, 507 for a full disk).
func adaptersStatus(err error) int {
	if s := adapters.StatusOf(err); s != http.StatusInternalServerError {
		return s
	}
	return http.StatusBadRequest
}

// AdapterUsers names the created models made with the adapter named name
// (the adapter pool's UsedBy).
func (a *API) AdapterUsers(name string) []string {
	var users []string
	for _, m := range a.madeModels() {
		if m.Name != name && slices.ContainsFunc(m.Adapters, func(r ipc.AdapterRef) bool { return r.Name == name }) {
			users = append(users, m.Name)
		}
	}
	return users
}

// madeModels lists the created models and the fine-tuned ones (as
// fineTunedManifest makes them): every model made from another.
func (a *API) madeModels() []ipc.ModelManifest {
	out := a.manifests()
	if pool := a.adapterPool(); pool != nil {
		for _, info := range pool.List() {
			if m, ok := a.fineTunedManifest(info.Name); ok {
				out = append(out, *m)
			}
		}
	}
	return out
}

// checkUnused refuses (409) to delete the model named name, at path when
// it is a file, while created models are made from it: they would fail
// every request. (Models created now copy a created base's settings and
// are made from its file; a chain by name is what earlier versions
// stored.)
func (a *API) checkUnused(name, path string) error {
	var users []string
	for _, m := range a.madeModels() {
		if m.Name == canonicalName(name) {
			continue
		}
		made := m.From == canonicalName(name)
		if !made && path != "" {
			p, err := a.models.Resolve(m.From)
			made = m.From == path || err == nil && p == path
		}
		if made {
			users = append(users, m.Name)
		}
	}
	if len(users) == 0 {
		return nil
	}
	slices.Sort(users)
	what := fmt.Sprintf("the model %q", users[0])
	if len(users) > 1 {
		what = fmt.Sprintf("the models %q", users)
	}
	return &requestError{status: http.StatusConflict, param: "model",
		msg: fmt.Sprintf("%q is the base of %s: delete those first", name, what)}
}
