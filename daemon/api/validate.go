package api

import (
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/sample"
	"github.com/ruvllm/ruvllm/ipc"
)

// Limits on what one request may ask for. Each bounds memory or work that
// a client's number would otherwise size; all are documented in the
// README's security model.
const (
	// MaxAdaptersPerRequest is how many LoRA adapters one request may
	// stack (each costs a matrix product per adapted weight and token).
	MaxAdaptersPerRequest = 4
	// MaxAdapterScale bounds an adapter's scale (|scale|); 1 applies it as
	// trained.
	MaxAdapterScale = 8
	// MaxStops is how many stop strings one request may give, and
	// MaxStopBytes how long each may be.
	MaxStops, MaxStopBytes = 16, 512
	// MaxEmbeddingInputs is how many texts one embeddings request may hold.
	MaxEmbeddingInputs = 2048
	// MaxTopLogprobs bounds top_logprobs (OpenAI's own limit).
	MaxTopLogprobs = 20
	// MaxLogitBias bounds the entries of logit_bias, and MaxBias the
	// magnitude of each (OpenAI's range).
	MaxLogitBias, MaxBias = 1024, 100
)

// requestError is a client mistake: status is a 4xx, param names the
// field at fault (OpenAI's "param") when there is one.
type requestError struct {
	status int
	msg    string
	param  string
}

func (e *requestError) Error() string { return e.msg }

// badParam is a 400 naming the field at fault.
func badParam(param, format string, args ...any) *requestError {
	return &requestError{status: http.StatusBadRequest, msg: param + " " + fmt.Sprintf(format, args...), param: param}
}

// samplingNames are how one API names the sampling fields: OpenAI at the
// top level of the body, Ollama under "options.".
type samplingNames struct {
	prefix string
	// maxTemperature is the protocol's upper bound (OpenAI documents 2).
	maxTemperature float32
}

var (
	openAINames = samplingNames{maxTemperature: 2}
	ollamaNames = samplingNames{prefix: "options.", maxTemperature: 100}
)

// samplingOverrides are the sampling fields a request may leave out (nil:
// the protocol's default stays).
type samplingOverrides struct {
	temperature, topP, minP, typicalP, repeatPenalty *float32
	topK, repeatLastN                                *int
}

// apply sets p's fields from those the request sent.
func (o samplingOverrides) apply(p *sample.Params) {
	for _, f := range []struct {
		dst *float32
		v   *float32
	}{{&p.Temperature, o.temperature}, {&p.TopP, o.topP}, {&p.MinP, o.minP}, {&p.TypicalP, o.typicalP}, {&p.RepeatPenalty, o.repeatPenalty}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	if o.topK != nil {
		p.TopK = *o.topK
	}
	if o.repeatLastN != nil {
		p.RepeatLastN = *o.repeatLastN
	}
	keepOneAtZero(&p.TopP, o.topP)
	keepOneAtZero(&p.TypicalP, o.typicalP)
}

// keepOne is the top_p (typical_p) that keeps only the most probable
// token: what a request's 0 means in llama.cpp, Ollama and OpenAI, where
// the sampler reads 0 as "off" (and sampled the whole vocabulary).
const keepOne = math.SmallestNonzeroFloat32

// keepOneAtZero sets *dst to keepOne when the request sent exactly 0.
func keepOneAtZero(dst, sent *float32) {
	if sent != nil && *sent == 0 {
		*dst = keepOne
	}
}

// shownP is a top_p or typical_p as the client sent it, for answers that
// report it.
func shownP(v float32) float32 {
	if v == keepOne {
		return 0
	}
	return v
}

// penaltiesOffAtZero turns the repetition penalties off when the request
// sent repeat_last_n 0: a window of no tokens, which Ollama and
// llama-server document as "0 = disabled". The sampler reads a window of 0
// as its default (64), so the penalties went on.
func penaltiesOffAtZero(p *sample.Params, sent *int) {
	if sent != nil && *sent == 0 {
		p.RepeatPenalty, p.PresencePenalty, p.FrequencyPenalty = 1, 0, 0
	}
}

// setSeed applies a request's seed, if it has one (sample.Params.SetSeed).
func setSeed(p *sample.Params, seed *int64) {
	if seed != nil {
		p.SetSeed(*seed)
	}
}

// checkSampling validates every sampling option of either API, before
// anything runs: a value outside its range is a 400 naming the field, never
// silently clamped or ignored.
func checkSampling(p sample.Params, n samplingNames) error {
	in := func(field string, v, lo, hi float32) error {
		if math.IsNaN(float64(v)) || v < lo || v > hi {
			return badParam(n.prefix+field, "must be between %g and %g, not %g", lo, hi, v)
		}
		return nil
	}
	checks := []error{
		in("temperature", p.Temperature, 0, n.maxTemperature),
		in("top_p", p.TopP, 0, 1),
		in("min_p", p.MinP, 0, 1),
		in("typical_p", p.TypicalP, 0, 1),
		in("repeat_penalty", p.RepeatPenalty, 0, 10),
		in("presence_penalty", p.PresencePenalty, -2, 2),
		in("frequency_penalty", p.FrequencyPenalty, -2, 2),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	if p.TopK < 0 {
		return badParam(n.prefix+"top_k", "must not be negative, not %d", p.TopK)
	}
	if p.RepeatLastN < -1 {
		return badParam(n.prefix+"repeat_last_n", "must be -1 (the whole context), 0 (the default) or positive, not %d", p.RepeatLastN)
	}
	return nil
}

// checkLogitBias checks logit_bias once the model (and so its vocabulary)
// is known: every token id must exist and every bias be within ±MaxBias
// or -Inf (a ban: llama-server's false).
func checkLogitBias(bias map[int32]float32, vocab int) error {
	for id, v := range bias {
		if id < 0 || int(id) >= vocab {
			return badParam("logit_bias", "names token id %d, outside the model's vocabulary [0, %d)", id, vocab)
		}
		if math.IsInf(float64(v), -1) {
			continue
		}
		if math.IsNaN(float64(v)) || v < -MaxBias || v > MaxBias {
			return badParam("logit_bias", "for token %d must be between -%d and %d, not %g", id, MaxBias, MaxBias, v)
		}
	}
	return nil
}

// checkStops bounds the stop strings (each one is matched against every
// generated character).
func checkStops(stops []string, param string) error {
	if len(stops) > MaxStops {
		return badParam(param, "may hold at most %d strings, not %d", MaxStops, len(stops))
	}
	for i, s := range stops {
		if s == "" {
			return badParam(fmt.Sprintf("%s[%d]", param, i), "must not be empty")
		}
		if len(s) > MaxStopBytes {
			return badParam(fmt.Sprintf("%s[%d]", param, i), "is %d bytes long; at most %d are allowed", len(s), MaxStopBytes)
		}
	}
	return nil
}

// checkAdapters bounds a request's adapters: at most MaxAdaptersPerRequest,
// each named once, each with a finite scale within ±MaxAdapterScale.
func checkAdapters(refs []ipc.AdapterRef, param string) error {
	if len(refs) > MaxAdaptersPerRequest {
		return badParam(param, "may name at most %d adapters, not %d", MaxAdaptersPerRequest, len(refs))
	}
	seen := make(map[string]bool, len(refs))
	for i, r := range refs {
		at := fmt.Sprintf("%s[%d]", param, i)
		if r.Name == "" {
			return badParam(at+".name", "is required")
		}
		if seen[r.Name] {
			return badParam(at+".name", "names adapter %q a second time", r.Name)
		}
		seen[r.Name] = true
		if err := checkAdapterScale(r.Scale, at+".scale"); err != nil {
			return err
		}
	}
	return nil
}

// checkAdapterScale bounds an adapter's scale.
func checkAdapterScale(scale float32, param string) error {
	if s := float64(scale); math.IsNaN(s) || math.IsInf(s, 0) || s < -MaxAdapterScale || s > MaxAdapterScale {
		return badParam(param, "must be between -%d and %d, not %g", MaxAdapterScale, MaxAdapterScale, scale)
	}
	return nil
}

// chatRoles are the roles a chat message may have; "developer" is the
// OpenAI SDK's name for the system role of newer models.
var chatRoles = map[string]string{"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}

// checkRole maps a message's role to the template's role, or answers a 400
// naming the message.
func checkRole(role string, i int, param string) (string, error) {
	if r, ok := chatRoles[role]; ok {
		return r, nil
	}
	at := fmt.Sprintf("%s[%d].role", param, i)
	if role == "function" {
		return "", badParam(at, "is \"function\", the deprecated form of \"tool\": send tool results with role \"tool\"")
	}
	return "", badParam(at, "is %q, not a role: use system, developer, user, assistant or tool", role)
}

// checkEncodingFormat checks an embeddings request's encoding_format.
func checkEncodingFormat(f string) error {
	switch f {
	case "", "float", "base64":
		return nil
	}
	return badParam("encoding_format", "must be \"float\" or \"base64\", not %q", f)
}

// checkEmbeddingInputs bounds an embeddings request's texts.
func checkEmbeddingInputs(in []string, param string) error {
	if len(in) == 0 {
		return badParam(param, "must not be empty")
	}
	if len(in) > MaxEmbeddingInputs {
		return badParam(param, "may hold at most %d texts, not %d", MaxEmbeddingInputs, len(in))
	}
	for i, s := range in {
		if strings.TrimSpace(s) == "" {
			if len(in) == 1 {
				return badParam(param, "must not be an empty string")
			}
			return badParam(fmt.Sprintf("%s[%d]", param, i), "must not be an empty string")
		}
	}
	return nil
}

// MaxMessages bounds the messages of one chat request. Every message
// costs the daemon some kilobytes while the chat is rendered and fitted
// to the context (300,000 one-letter messages peaked at 700 MB), and no
// context holds more turns than this.
const MaxMessages = 65536

// checkMessageCount refuses a chat of more than MaxMessages messages,
// naming param.
func checkMessageCount(n int, param string) error {
	if n > MaxMessages {
		return badParam(param, "has %d messages; at most %d are taken", n, MaxMessages)
	}
	return nil
}

// chatMessages converts a request's chat messages, checking each role and
// refusing by name what the model cannot read (images, audio) and what
// needs tool calling.
func chatMessages(in []ipc.Message, param string) ([]chat.Message, error) {
	if err := checkMessageCount(len(in), param); err != nil {
		return nil, err
	}
	out := make([]chat.Message, 0, len(in))
	for i, m := range in {
		at := fmt.Sprintf("%s[%d]", param, i)
		role, err := checkRole(m.Role, i, param)
		if err != nil {
			return nil, err
		}
		if len(m.NonText) > 0 {
			return nil, badParam(at+".content", "has a %q part: this model takes text only (no images, audio or files)", m.NonText[0])
		}
		if len(m.Images) > 0 {
			return nil, badParam(at+".images", "this model takes no images")
		}
		cm := chat.Message{Role: role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name, ReasoningContent: m.ReasoningContent}
		if cm.ReasoningContent == "" {
			cm.ReasoningContent = m.Thinking
		}
		if m.ToolName != "" && cm.Name == "" {
			cm.Name = m.ToolName
		}
		if len(m.ToolCalls) > 0 {
			if role != "assistant" {
				return nil, badParam(at+".tool_calls", "only assistant messages carry tool calls")
			}
			calls, err := chatToolCalls(m.ToolCalls, at)
			if err != nil {
				return nil, err
			}
			cm.ToolCalls = calls
		}
		out = append(out, cm)
	}
	linkToolCalls(out)
	return out, nil
}

// linkToolCalls gives an id to each call that came without one (Ollama's
// calls and tool turns carry none) and to the tool turns that answer them,
// so that a chat template which renders or checks the ids renders the
// conversation: Mistral's raise on a call without a nine-character id. A
// tool turn answers the first unanswered call of the previous assistant
// turn whose function it names (Ollama's tool_name), else the first
// unanswered one. The ids are numbered in order ("call00001"), nine letters
// and digits as Mistral's templates ask, and the same on every request of
// a conversation, so its prompt's prefix stays cached.
func linkToolCalls(msgs []chat.Message) {
	n := 0
	var pending []*chat.ToolCall // the last assistant turn's unanswered calls
	for i := range msgs {
		m := &msgs[i]
		switch {
		case len(m.ToolCalls) > 0:
			pending = pending[:0]
			for j := range m.ToolCalls {
				c := &m.ToolCalls[j]
				n++
				if c.ID == "" {
					c.ID = fmt.Sprintf("call%05d", n%100000)
				}
				pending = append(pending, c)
			}
		case m.Role == "tool":
			k := -1
			for j, c := range pending {
				if m.ToolCallID != "" && c.ID == m.ToolCallID || m.ToolCallID == "" && m.Name != "" && c.Function.Name == m.Name {
					k = j
					break
				}
			}
			if k < 0 && m.ToolCallID == "" && len(pending) > 0 {
				k = 0
			}
			if k >= 0 {
				if m.ToolCallID == "" {
					m.ToolCallID = pending[k].ID
				}
				pending = append(pending[:k], pending[k+1:]...)
			}
		}
	}
}
