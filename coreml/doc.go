// Package coreml detects Core ML and the compute units it can use on this
// Mac — CPU, GPU and the Apple Neural Engine (ANE) — through purego (no
// cgo). It is the first part of the Core ML backend the architecture
// plans; it is not a compute backend yet.
//
// What exists:
//   - Probe opens CoreML.framework, confirms the MLModel class is present,
//     and, on macOS 14 and later, lists the compute devices Core ML can
//     use (MLAllComputeDevices): the CPU, each GPU with its Metal name,
//     and the Neural Engine with its core count. On older macOS it reports
//     Core ML present with the device list unknown. On other systems it
//     returns ErrUnavailable.
//   - `ruvllm backends` prints the result (through internal/backends).
//
// What does not exist, so nothing here implements compute.Backend and
// internal/backends does not register coreml as a --backend choice:
//   - No model operation runs on Core ML or the ANE. There is no MLModel
//     construction, compilation, loading or prediction.
//
// Verification: compiled for darwin/arm64 only (make test-darwin). Probe
// has never run on a Mac. The platform-independent parts (Info, its text
// form) are tested on Linux.
//
// The plan for the backend, for whoever continues. The ANE cannot be
// programmed directly; it runs Core ML models. So the backend would
//  1. write, per weight matrix (or per layer's Q/K/V/O and FFN
//     projections), an ML Program (a .mlpackage: Model.proto with an
//     mlProgram of MIL ops — linear/matmul over fp16 constants kept in
//     weights/weight.bin) with a fixed or enumerated batch dimension,
//     dequantizing GGUF weights to fp16 since the ANE computes in fp16;
//  2. compile it once with +[MLModel compileModelAtURL:error:] into a
//     cache directory keyed by the model file's fingerprint, and load it
//     with an MLModelConfiguration whose computeUnits is
//     MLComputeUnitsCPUAndNeuralEngine (3);
//  3. implement MatMul for those weights by predictionFromFeatures:error:
//     over MLMultiArray inputs backed by the activation memory
//     (initWithDataPointer:shape:dataType:strides:deallocator:error:),
//     and delegate every other operation to the CPU (or Metal) backend,
//     as metal/ delegates the types it has no kernel for;
//  4. test it on a Mac against the CPU backend exactly as
//     metal/metal_test.go does, and measure whether the per-call Core ML
//     overhead leaves any gain for decode (one row) as opposed to prefill.
//
// Writing the protobuf needs the Core ML model specification
// (coremltools' mlmodel/format/*.proto) compiled for Go; none of that is
// here yet.
package coreml
