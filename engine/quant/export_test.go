package quant

// RMSEBound exposes rmseBound to the external tests (package quant_test),
// which cannot import engine/gguf from inside package quant.
func RMSEBound(t Type) (rmse, max float64) { b := rmseBound[t]; return b.rmse, b.max }

// QuantTypes exposes quantTypes to the external tests.
var QuantTypes = quantTypes
