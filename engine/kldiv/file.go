package kldiv

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// The file llama-perplexity --kl-divergence-base writes (little-endian):
//
//	"_logits_"                   8 bytes of magic
//	n_ctx                        uint32, tokens per chunk
//	n_vocab, n_chunk             int32 each
//	tokens                       n_ctx·n_chunk int32, the text's tokens
//	for each chunk, for each of its positions n_ctx/2 .. n_ctx−2:
//	  scale, min                 float32 each (as four uint16)
//	  q[0..n_vocab)              uint16: log p = scale·q + min
//	  padding                    up to an even n_vocab
//
// Each position's record holds the log-probabilities of the next token, so
// position i of a chunk predicts token i+1. A chunk's first token is
// replaced by BOS when the model adds one (the file keeps the text's).
var magic = [8]byte{'_', 'l', 'o', 'g', 'i', 't', 's', '_'}

// Limits on what a file may declare, checked before anything is sized by
// it: a context of 1 M tokens, a vocabulary of 4 M and 1 G tokens of text
// are far beyond any real use.
const (
	maxCtx    = 1 << 20
	maxVocab  = 1 << 22
	maxTokens = 1 << 30
)

// Header is the start of a base log-probabilities file.
type Header struct {
	Ctx    int     // tokens per chunk
	Vocab  int     // vocabulary size
	Chunks int     // number of chunks
	Tokens []int32 // Ctx·Chunks tokens of text
}

// Scored is the number of positions of a chunk that carry log-probabilities:
// n_ctx/2 .. n_ctx−2.
func (h *Header) Scored() int { return h.Ctx - 1 - h.Ctx/2 }

// First is the first scored position of a chunk.
func (h *Header) First() int { return h.Ctx / 2 }

// recordWords is the number of uint16 words of one position's record.
func recordWords(vocab int) int { return 2*((vocab+1)/2) + 4 }

// Reader reads a base log-probabilities file.
type Reader struct {
	r   *bufio.Reader
	h   Header
	buf []byte
}

// NewReader reads the header of a file from r. The token count is checked
// against the limits above before the tokens are read; a reader of a file
// of known size should also wrap r in an io.LimitReader.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var head [20]byte
	if _, err := io.ReadFull(br, head[:]); err != nil {
		return nil, fmt.Errorf("kldiv: header: %w", err)
	}
	if [8]byte(head[:8]) != magic {
		return nil, errors.New("kldiv: not a llama-perplexity log-probabilities file (no _logits_ magic)")
	}
	ctx := binary.LittleEndian.Uint32(head[8:])
	vocab := int32(binary.LittleEndian.Uint32(head[12:]))
	chunks := int32(binary.LittleEndian.Uint32(head[16:]))
	switch {
	case ctx < 4 || ctx > maxCtx:
		return nil, fmt.Errorf("kldiv: context of %d tokens (want 4 to %d)", ctx, maxCtx)
	case vocab < 2 || vocab > maxVocab:
		return nil, fmt.Errorf("kldiv: vocabulary of %d tokens (want 2 to %d)", vocab, maxVocab)
	case chunks < 1 || int64(chunks)*int64(ctx) > maxTokens:
		return nil, fmt.Errorf("kldiv: %d chunks of %d tokens (want 1 to %d tokens)", chunks, ctx, maxTokens)
	}
	h := Header{Ctx: int(ctx), Vocab: int(vocab), Chunks: int(chunks)}
	// Read the tokens in pieces, so that a short file fails before a large
	// declared count is allocated in full.
	n := h.Ctx * h.Chunks
	var piece [4 << 10]byte
	for len(h.Tokens) < n {
		m := min(n-len(h.Tokens), len(piece)/4)
		if _, err := io.ReadFull(br, piece[:4*m]); err != nil {
			return nil, fmt.Errorf("kldiv: tokens: %w", err)
		}
		for i := range m {
			tok := int32(binary.LittleEndian.Uint32(piece[4*i:]))
			if tok < 0 || int(tok) >= h.Vocab {
				return nil, fmt.Errorf("kldiv: token %d at %d outside the vocabulary of %d", tok, len(h.Tokens), h.Vocab)
			}
			h.Tokens = append(h.Tokens, tok)
		}
	}
	return &Reader{r: br, h: h}, nil
}

// Header returns the file's header.
func (r *Reader) Header() *Header { return &r.h }

// Next reads the next position's record into dst (len Vocab) as natural
// log-probabilities. It returns io.EOF after the last record.
func (r *Reader) Next(dst []float64) error {
	words := recordWords(r.h.Vocab)
	if cap(r.buf) < 2*words {
		r.buf = make([]byte, 2*words)
	}
	buf := r.buf[:2*words]
	if _, err := io.ReadFull(r.r, buf); err != nil {
		if err == io.EOF {
			return io.EOF
		}
		return fmt.Errorf("kldiv: record: %w", err)
	}
	scale := math.Float32frombits(binary.LittleEndian.Uint32(buf))
	lo := math.Float32frombits(binary.LittleEndian.Uint32(buf[4:]))
	if math.IsNaN(float64(scale)) || math.IsInf(float64(scale), 0) || math.IsNaN(float64(lo)) || math.IsInf(float64(lo), 0) {
		return fmt.Errorf("kldiv: record with scale %v and minimum %v", scale, lo)
	}
	q := buf[8:]
	for i := range dst[:r.h.Vocab] {
		// float32 arithmetic, as llama-perplexity decodes it.
		dst[i] = float64(scale*float32(binary.LittleEndian.Uint16(q[2*i:])) + lo)
	}
	return nil
}

// Writer writes a base log-probabilities file.
type Writer struct {
	w     *bufio.Writer
	vocab int
	buf   []byte
}

// NewWriter writes the header of a file for h to w.
func NewWriter(w io.Writer, h *Header) (*Writer, error) {
	if h.Ctx < 4 || h.Ctx > maxCtx || h.Vocab < 2 || h.Vocab > maxVocab || h.Chunks < 1 || len(h.Tokens) != h.Ctx*h.Chunks {
		return nil, fmt.Errorf("kldiv: header of %d chunks of %d tokens, vocabulary %d, %d tokens", h.Chunks, h.Ctx, h.Vocab, len(h.Tokens))
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	var head [20]byte
	copy(head[:], magic[:])
	binary.LittleEndian.PutUint32(head[8:], uint32(h.Ctx))
	binary.LittleEndian.PutUint32(head[12:], uint32(h.Vocab))
	binary.LittleEndian.PutUint32(head[16:], uint32(h.Chunks))
	bw.Write(head[:])
	var b [4]byte
	for _, t := range h.Tokens {
		binary.LittleEndian.PutUint32(b[:], uint32(t))
		bw.Write(b[:])
	}
	return &Writer{w: bw, vocab: h.Vocab}, nil
}

// Write appends one position's record, compressing logits as
// llama-perplexity does: log-probabilities from the largest down to 16
// below it in 65535 steps, anything lower as the lowest step.
func (w *Writer) Write(logits []float32) error {
	if len(logits) != w.vocab {
		return fmt.Errorf("kldiv: %d logits for a vocabulary of %d", len(logits), w.vocab)
	}
	words := recordWords(w.vocab)
	if cap(w.buf) < 2*words {
		w.buf = make([]byte, 2*words)
	}
	buf := w.buf[:2*words]
	clear(buf)
	hi, lo := logits[0], logits[0]
	for _, v := range logits {
		hi, lo = max(hi, v), min(lo, v)
	}
	lo = max(lo, hi-16)
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v - hi))
	}
	lse := float32(math.Log(sum))
	minLog := lo - hi - lse
	scale := (hi - lo) / 65535
	binary.LittleEndian.PutUint32(buf, math.Float32bits(scale))
	binary.LittleEndian.PutUint32(buf[4:], math.Float32bits(minLog))
	if scale != 0 {
		inv := 1 / scale
		for i, v := range logits {
			if v > lo {
				q := math.RoundToEven(float64(inv * (v - lo)))
				binary.LittleEndian.PutUint16(buf[8+2*i:], uint16(min(q, 65535)))
			}
		}
	}
	_, err := w.w.Write(buf)
	return err
}

// Flush writes out what is buffered.
func (w *Writer) Flush() error { return w.w.Flush() }
