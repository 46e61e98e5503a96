// Package quantize converts GGUF models to other weight types the way
// llama.cpp's llama-quantize does: the same per-tensor type rules for the
// file types (Q4_K_M and the other mixes), the same quantizers (with or
// without an importance matrix, engine/quant.QuantizeRows) and the same
// file layout, so that where llama.cpp's quantization is deterministic the
// output file is byte for byte the one llama-quantize writes.
package quantize

import (
	"fmt"
	"strings"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// FileType is one of llama.cpp's file types (LLAMA_FTYPE): the type most
// tensors get and the rules that pick others for some of them. ID is the
// value stored in general.file_type.
type FileType struct {
	Name    string
	ID      uint32
	Default quant.Type
}

// The file types, as llama.h numbers them.
const (
	ftF32     = 0
	ftF16     = 1
	ftQ4_0    = 2
	ftQ4_1    = 3
	ftQ8_0    = 7
	ftQ5_0    = 8
	ftQ5_1    = 9
	ftQ2_K    = 10
	ftQ3_K_S  = 11
	ftQ3_K_M  = 12
	ftQ3_K_L  = 13
	ftQ4_K_S  = 14
	ftQ4_K_M  = 15
	ftQ5_K_S  = 16
	ftQ5_K_M  = 17
	ftQ6_K    = 18
	ftIQ2_XXS = 19
	ftIQ2_XS  = 20
	ftQ2_K_S  = 21
	ftIQ3_XS  = 22
	ftIQ3_XXS = 23
	ftIQ1_S   = 24
	ftIQ4_NL  = 25
	ftIQ3_S   = 26
	ftIQ3_M   = 27
	ftIQ2_S   = 28
	ftIQ2_M   = 29
	ftIQ4_XS  = 30
	ftIQ1_M   = 31
	ftBF16    = 32
)

// fileTypes lists the file types by the names llama-quantize accepts
// (aliases included).
var fileTypes = []FileType{
	{"F32", ftF32, quant.F32},
	{"F16", ftF16, quant.F16},
	{"BF16", ftBF16, quant.BF16},
	{"Q4_0", ftQ4_0, quant.Q4_0},
	{"Q4_1", ftQ4_1, quant.Q4_1},
	{"Q5_0", ftQ5_0, quant.Q5_0},
	{"Q5_1", ftQ5_1, quant.Q5_1},
	{"Q8_0", ftQ8_0, quant.Q8_0},
	{"Q2_K", ftQ2_K, quant.Q2_K},
	{"Q2_K_S", ftQ2_K_S, quant.Q2_K},
	{"Q3_K", ftQ3_K_M, quant.Q3_K},
	{"Q3_K_S", ftQ3_K_S, quant.Q3_K},
	{"Q3_K_M", ftQ3_K_M, quant.Q3_K},
	{"Q3_K_L", ftQ3_K_L, quant.Q3_K},
	{"Q4_K", ftQ4_K_M, quant.Q4_K},
	{"Q4_K_S", ftQ4_K_S, quant.Q4_K},
	{"Q4_K_M", ftQ4_K_M, quant.Q4_K},
	{"Q5_K", ftQ5_K_M, quant.Q5_K},
	{"Q5_K_S", ftQ5_K_S, quant.Q5_K},
	{"Q5_K_M", ftQ5_K_M, quant.Q5_K},
	{"Q6_K", ftQ6_K, quant.Q6_K},
	{"IQ4_NL", ftIQ4_NL, quant.IQ4_NL},
	{"IQ4_XS", ftIQ4_XS, quant.IQ4_XS},
	{"IQ3_XXS", ftIQ3_XXS, quant.IQ3_XXS},
	{"IQ3_XS", ftIQ3_XS, quant.IQ3_S},
	{"IQ3_S", ftIQ3_S, quant.IQ3_S},
	{"IQ3_M", ftIQ3_M, quant.IQ3_S},
	{"IQ2_XXS", ftIQ2_XXS, quant.IQ2_XXS},
	{"IQ2_XS", ftIQ2_XS, quant.IQ2_XS},
	{"IQ2_S", ftIQ2_S, quant.IQ2_XS},
	{"IQ2_M", ftIQ2_M, quant.IQ2_S},
	{"IQ1_S", ftIQ1_S, quant.IQ1_S},
	{"IQ1_M", ftIQ1_M, quant.IQ1_M},
}

// ParseFileType returns the file type named s (case-insensitive, as
// llama-quantize names them: Q4_K_M, IQ4_XS, Q8_0, F16, ...).
func ParseFileType(s string) (FileType, error) {
	for _, ft := range fileTypes {
		if strings.EqualFold(ft.Name, s) {
			return ft, nil
		}
	}
	return FileType{}, fmt.Errorf("unknown quantization type %q (one of %s)", s, strings.Join(FileTypeNames(), ", "))
}

// FileTypeByID returns the file type that llama.h numbers id (a GGUF
// file's general.file_type).
func FileTypeByID(id uint32) (FileType, bool) {
	for _, ft := range fileTypes {
		if ft.ID == id {
			return ft, true
		}
	}
	return FileType{}, false
}

// BitsPerWeight is the size of the file type's default tensor type, in
// bits per weight (Q8_0: 8.5, Q4_0: 4.5); the tensors a mix keeps in other
// types are not counted.
func (ft FileType) BitsPerWeight() float64 {
	return 8 * float64(ft.Default.BlockBytes()) / float64(ft.Default.BlockSize())
}

// FileTypeNames lists the accepted file type names.
func FileTypeNames() []string {
	names := make([]string, len(fileTypes))
	for i, ft := range fileTypes {
		names[i] = ft.Name
	}
	return names
}
