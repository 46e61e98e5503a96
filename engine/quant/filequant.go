package quant

import "fmt"

// weightedQuant encodes one row with importance weights qw (one per
// column), as llama.cpp's quantize_<type> does when given an importance
// matrix.
type weightedQuant func(dst []byte, src, qw []float32)

// fileQuants is the registration table of the file quantizers that
// differ from the row quantizer of formats (fileRow) or that take an
// importance matrix (weighted), filled by each format's file.
var fileQuants = map[Type]fileQuant{}

type fileQuant struct {
	row      RowFunc       // without importance matrix; nil: formats' quant
	weighted weightedQuant // nil: the matrix is ignored (Q8_0, F16, ...)
	needs    bool          // refuses to run without an importance matrix
}

func init() {
	fileQuants[IQ4_NL] = fileQuant{row: quantizeIQ4_NL, weighted: quantizeIQ4_NLWeighted}
	fileQuants[IQ4_XS] = fileQuant{row: quantizeIQ4_XS, weighted: quantizeIQ4_XSWeighted}
}

// ErrNeedsImatrix is returned by QuantizeRows for a type whose quantizer
// needs an importance matrix when none is given.
var ErrNeedsImatrix = fmt.Errorf("quant: type needs an importance matrix")

// CanQuantizeFile reports whether QuantizeRows encodes type t, and
// whether it needs an importance matrix to.
func CanQuantizeFile(t Type) (ok, needsImatrix bool) {
	fq, has := fileQuants[t]
	if has && (fq.row != nil || fq.weighted != nil) {
		return true, fq.needs
	}
	f, has := formats[t]
	return has && f.quant != nil && t != Q8_1 && t != Q8_K, false
}

// QuantizeRows encodes rows×cols values of src as type t into dst the way
// llama-quantize does (ggml_quantize_chunk): the same bytes, given the
// same importance matrix imatrix (cols weights, or nil). dst must be
// exactly rows·t.RowBytes(cols) long.
func QuantizeRows(t Type, dst []byte, src []float32, rows, cols int, imatrix []float32) error {
	ok, needs := CanQuantizeFile(t)
	if !ok {
		return fmt.Errorf("quantize %s: %w", t, ErrUnsupported)
	}
	if needs && imatrix == nil {
		return fmt.Errorf("quantize %s: %w", t, ErrNeedsImatrix)
	}
	rb, err := t.RowBytes(cols)
	if err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	if rows < 0 || len(src) != rows*cols || len(dst) != rows*rb {
		return fmt.Errorf("quantize %s: %d×%d values need %d floats and %d bytes, have %d and %d", t, rows, cols, rows*cols, rows*rb, len(src), len(dst))
	}
	if imatrix != nil && len(imatrix) != cols {
		return fmt.Errorf("quantize %s: importance matrix of %d values for rows of %d", t, len(imatrix), cols)
	}
	fq := fileQuants[t]
	for r := 0; r < rows; r++ {
		out, in := dst[r*rb:(r+1)*rb], src[r*cols:(r+1)*cols]
		switch {
		case imatrix != nil && fq.weighted != nil:
			fq.weighted(out, in, imatrix)
		case fq.row != nil:
			fq.row(out, in)
		default:
			formats[t].quant(out, in)
		}
	}
	return nil
}
