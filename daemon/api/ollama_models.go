package api

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ruvllm/ruvllm/daemon"
	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/llm"
	"github.com/ruvllm/ruvllm/engine/modelinfo"
	"github.com/ruvllm/ruvllm/ipc"
)

// fileDesc is what /api/show, /api/tags and /api/ps tell of a model file,
// read from its GGUF header without loading it.
type fileDesc struct {
	size         int64
	mod          time.Time
	details      ipc.OllamaModelDetails
	info         map[string]any // model_info without large arrays
	verboseInfo  map[string]any // with them
	capabilities []string
	template     string
}

// descCache keeps descriptions by path, checked against size and mtime.
type descCache struct {
	mu sync.Mutex
	m  map[string]*fileDesc
}

// describe reads (or recalls) the description of the GGUF at path.
func (a *API) describe(path string) (*fileDesc, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	a.descs.mu.Lock()
	d := a.descs.m[path]
	a.descs.mu.Unlock()
	if d != nil && d.size == st.Size() && d.mod.Equal(st.ModTime()) {
		return d, nil
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sum := modelinfo.Describe(f, path)
	d = &fileDesc{size: st.Size(), mod: st.ModTime(), template: sum.ChatTemplate,
		info: map[string]any{}, verboseInfo: map[string]any{}}
	arch := sum.Architecture
	quant := ""
	if ft, ok := f.Uint("general.file_type"); ok {
		quant = modelinfo.FileTypeName(ft)
	}
	if quant == "" && len(sum.QuantMix) > 0 {
		quant = sum.QuantMix[0].Type
	}
	d.details = ipc.OllamaModelDetails{Format: "gguf", Family: arch, Families: []string{arch},
		ParameterSize: modelinfo.HumanCount(sum.Parameters), QuantizationLevel: quant}
	for _, kv := range f.KV {
		if kv.Key == "tokenizer.chat_template" {
			continue
		}
		v := kv.Value
		if v.IsArray() {
			all := make([]any, 0, v.Len())
			for i := range v.Len() {
				x, _ := v.Index(i)
				all = append(all, modelinfo.JSONSafe(x.Interface()))
			}
			d.verboseInfo[kv.Key] = all
			if v.Len() <= modelinfo.MaxArray {
				d.info[kv.Key] = all
			} else {
				d.info[kv.Key] = nil // as Ollama: large arrays only when verbose
			}
			continue
		}
		// A NaN or infinite float made the response unencodable: a 500.
		d.info[kv.Key], d.verboseInfo[kv.Key] = modelinfo.JSONSafe(v.Interface()), modelinfo.JSONSafe(v.Interface())
	}
	for _, m := range []map[string]any{d.info, d.verboseInfo} {
		m["general.parameter_count"] = sum.Parameters
		m["general.architecture"] = arch
	}
	d.capabilities = []string{"completion", "embedding", "tools"} // tools: every chat model, in its format or described
	if _, ok := llm.FileFIM(f); ok {
		d.capabilities = append(d.capabilities, "insert")
	}
	if src, variants := chat.TemplatesFromGGUF(f); src != "" {
		if t, err := chat.FromJinja(src, variants, chat.SpecialTokensFromGGUF(f)); err == nil && t.Reasoning() != nil {
			d.capabilities = append(d.capabilities, "thinking")
		}
	}
	a.descs.mu.Lock()
	if a.descs.m == nil {
		a.descs.m = map[string]*fileDesc{}
	}
	a.descs.m[path] = d
	a.descs.mu.Unlock()
	return d, nil
}

// fileDigest is the digest /api/tags and /api/ps give a model file: a
// hash of its path and modification time (not of its bytes: reading a
// multi-GiB file for a listing is too slow).
func fileDigest(path string, mod time.Time) string {
	return fmt.Sprintf("%x", fnv64(path+mod.String()))
}

// modelEntry is one model of /api/tags: a model file or a created model.
func (a *API) modelEntry(name, path string, size int64, mod time.Time) ipc.OllamaModel {
	om := ipc.OllamaModel{Name: name, Model: name, ModifiedAt: mod.UTC().Format(time.RFC3339), Size: size,
		Digest: fileDigest(path, mod), Details: ipc.OllamaModelDetails{Format: "gguf", Families: []string{}}}
	if d, err := a.describe(path); err == nil {
		om.Details = d.details
	}
	return om
}

func (a *API) ollamaTags(w http.ResponseWriter, r *http.Request) {
	list, err := a.models.List()
	if err != nil {
		ollamaError(w, err)
		return
	}
	out := ipc.OllamaTags{Models: []ipc.OllamaModel{}}
	for _, m := range list {
		if a.isBlob(m.Path) {
			continue // the loaded weights of a model created from files
		}
		out.Models = append(out.Models, a.modelEntry(m.Name, m.Path, m.Size, m.Modified))
	}
	// Created models and fine-tuning jobs' models (as /v1/models lists
	// them), while their base is there.
	for _, man := range a.madeModels() {
		rm, err := a.resolveModel(man.Name)
		if err != nil {
			continue
		}
		path, err := a.models.Resolve(rm.base)
		if err != nil {
			continue // its base is gone
		}
		st, err := os.Stat(path)
		if err != nil {
			continue
		}
		e := a.modelEntry(man.Name, path, st.Size(), man.Created)
		if !strings.Contains(man.Name, ":") {
			e.Name = man.Name + ":latest"
		}
		e.Model = e.Name // Ollama gives both the tagged name
		out.Models = append(out.Models, e)
	}
	slices.SortFunc(out.Models, func(x, y ipc.OllamaModel) int { return strings.Compare(x.Name, y.Name) })
	daemon.WriteJSON(w, http.StatusOK, out)
}

func (a *API) ollamaPs(w http.ResponseWriter, r *http.Request) {
	out := ipc.OllamaTags{Models: []ipc.OllamaModel{}}
	for _, lm := range a.models.Loaded() {
		om := ipc.OllamaModel{Name: lm.Name, Model: lm.Name, Size: lm.Size + lm.KVBytes,
			Details: ipc.OllamaModelDetails{Format: "gguf", Families: []string{}}}
		if st, err := os.Stat(lm.Path); err == nil {
			om.Digest = fileDigest(lm.Path, st.ModTime()) // the digest /api/tags gives it
		}
		if d, err := a.describe(lm.Path); err == nil {
			om.Details = d.details
		}
		if !lm.ExpiresAt.IsZero() {
			om.ExpiresAt = lm.ExpiresAt.UTC().Format(time.RFC3339)
		}
		out.Models = append(out.Models, om)
	}
	daemon.WriteJSON(w, http.StatusOK, out)
}

func (a *API) ollamaShow(w http.ResponseWriter, r *http.Request) {
	var body ipc.OllamaShowRequest
	if err := decode(r, &body); err != nil {
		ollamaError(w, err)
		return
	}
	if body.Model == "" {
		body.Model = body.Name
	}
	rm, err := a.resolveModel(body.Model)
	if err != nil {
		ollamaError(w, err)
		return
	}
	path, err := a.models.Resolve(rm.base)
	if err != nil {
		ollamaError(w, err)
		return
	}
	d, err := a.describe(path)
	if err != nil {
		// Not a GGUF header we can read: ask the loaded model (a backend
		// of another kind), which also tells a broken file by its load error.
		if d, err = a.describeLoaded(r, rm.base); err != nil {
			ollamaError(w, err)
			return
		}
	}
	info := d.info
	if body.Verbose {
		info = d.verboseInfo
	}
	out := ipc.OllamaShowResponse{Template: d.template, Details: d.details, ModelInfo: maps.Clone(info),
		Capabilities: d.capabilities, Modelfile: formatModelfile(rm.man, path), ModifiedAt: d.mod.UTC().Format(time.RFC3339)}
	if rm.man != nil {
		out.System = rm.man.System
		out.License = strings.Join(rm.man.License, "\n")
		out.Messages = rm.man.Messages
		out.Parameters = showParameters(rm.man.Parameters)
		if rm.man.Template != "" {
			out.Template = rm.man.Template
			out.Capabilities = templateCapabilities(out.Capabilities, rm.man.Template)
		}
		out.ModifiedAt = rm.man.Created.UTC().Format(time.RFC3339)
	}
	daemon.WriteJSON(w, http.StatusOK, out)
}

// templateCapabilities is caps, the base file's capabilities, for a
// created model with its own TEMPLATE: as Ollama reads it from the
// template, "thinking" where the template reads .Think (a request's think
// reaches it there), not where the file's chat template thinks.
func templateCapabilities(caps []string, src string) []string {
	out := slices.DeleteFunc(slices.Clone(caps), func(c string) bool { return c == "thinking" })
	if g, err := parseGoTemplate(src); err == nil {
		if g.thinks {
			out = append(out, "thinking")
		}
		if g.suffix && !slices.Contains(out, "insert") { // its fill-in-the-middle branch
			out = append(out, "insert")
		}
	}
	return out
}

// describeLoaded describes a model from its loaded form.
func (a *API) describeLoaded(r *http.Request, name string) (*fileDesc, error) {
	h, err := a.models.Acquire(r.Context(), name, nil)
	if err != nil {
		return nil, err
	}
	defer h.Release()
	info := h.Model.Info()
	mi := map[string]any{
		"general.architecture": info.Architecture, "general.parameter_count": info.Parameters,
		info.Architecture + ".context_length": info.ContextLength, info.Architecture + ".embedding_length": info.EmbeddingSize,
		"context_length": info.ContextLength, "embedding_length": info.EmbeddingSize, "vocab_size": info.VocabSize,
	}
	if cm, ok := h.Model.(configModel); ok {
		cfg := cm.Config()
		mi[info.Architecture+".block_count"] = cfg.Layers
		mi[info.Architecture+".attention.head_count"], mi[info.Architecture+".attention.head_count_kv"] = cfg.Heads, cfg.KVHeads
	}
	caps := []string{"completion", "embedding", "tools"}
	if info.Reasoning != nil {
		caps = append(caps, "thinking")
	}
	return &fileDesc{info: mi, verboseInfo: mi, template: info.ChatTemplate, capabilities: caps,
		details: ipc.OllamaModelDetails{Format: "gguf", Family: info.Architecture, Families: []string{info.Architecture},
			ParameterSize: modelinfo.HumanCount(info.Parameters), QuantizationLevel: info.FileType}}, nil
}

// ollamaEmbeddings answers the legacy POST /api/embeddings: one prompt,
// one vector (not normalised by a model of Ollama's, but unit length
// here as in /api/embed).
func (a *API) ollamaEmbeddings(w http.ResponseWriter, r *http.Request) {
	var body ipc.OllamaEmbeddingsRequest
	if err := decode(r, &body); err != nil {
		ollamaError(w, err)
		return
	}
	rm, err := a.resolveModel(body.Model)
	if err != nil {
		ollamaError(w, err)
		return
	}
	if body.Prompt == "" { // as Ollama: loads the model, embeds nothing
		a.preload(w, r, rm, body.Model, body.KeepAlive, func(string) any {
			return ipc.OllamaEmbeddingsResponse{Embedding: []float32{}}
		})
		return
	}
	if err := checkEmbeddingInputs([]string{body.Prompt}, "prompt"); err != nil {
		ollamaError(w, err)
		return
	}
	h, err := a.models.AcquireAs(r.Context(), rm.base, psName(rm.alias(body.Model)), keepAlive(body.KeepAlive))
	if err != nil {
		ollamaError(w, err)
		return
	}
	defer h.Release()
	vecs, _, err := a.embed(r, h, "api.embeddings", []string{body.Prompt}, llm.EmbedOptions{Truncate: true})
	if err != nil {
		ollamaError(w, err)
		return
	}
	daemon.WriteJSON(w, http.StatusOK, ipc.OllamaEmbeddingsResponse{Embedding: vecs[0]})
}

// fnv64 is a short stable digest for /api/tags' digest field.
func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
