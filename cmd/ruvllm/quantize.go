package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quantize"
)

func newQuantizeCmd() *cobra.Command {
	var (
		imatrixPath string
		pure        bool
		requantize  bool
		threads     int
		quiet       bool
	)
	cmd := &cobra.Command{
		Use:   "quantize IN.gguf OUT.gguf TYPE",
		Short: "Convert an F16/BF16/F32 model (or, with --allow-requantize, a quantized one) to a quantized type, like llama-quantize",
		Long: "quantize writes OUT.gguf with the weights of IN.gguf (F16, BF16 or F32) converted to TYPE, with\n" +
			"llama.cpp's per-tensor type rules for the mixes (Q4_K_M: Q6_K for some tensors, ...) and its\n" +
			"quantizers: the output is byte for byte what llama-quantize writes for the same input and type.\n" +
			"--imatrix FILE uses an importance matrix from llama-imatrix (GGUF or legacy .dat format), which\n" +
			"the IQ1, IQ2 and IQ3_XXS/IQ3_XS types need, as in llama.cpp. --allow-requantize accepts a quantized\n" +
			"IN (dequantized, then quantized again, as llama-quantize --allow-requantize: worse than from the\n" +
			"original weights; e.g. a Q4_0 draft model made from a Q8_0 file). OUT.gguf is written as a hidden\n" +
			"temporary file beside it (.OUT.gguf.tmpNNN), renamed once complete: a run cut off never leaves a\n" +
			"partial OUT.gguf, and the next run to OUT.gguf removes the temporary file of one killed outright.\n" +
			"Types: " + strings.Join(quantize.FileTypeNames(), ", ") + ".",
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, out, typ := args[0], args[1], args[2]
			ft, err := quantize.ParseFileType(typ)
			if err != nil {
				return err
			}
			if sameFile(in, out) {
				return errors.New("quantize: the output must be another file than the input")
			}
			f, err := gguf.Open(in)
			if err != nil {
				return err
			}
			defer f.Close()
			o := quantize.Options{Type: ft, Pure: pure, Threads: threads, AllowRequantize: requantize}
			if imatrixPath != "" {
				im, err := quantize.ReadImatrix(imatrixPath)
				if err != nil {
					return err
				}
				o.Imatrix, o.ImatrixPath = im, imatrixPath
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			var bar *progressbar.ProgressBar
			if !quiet {
				o.Progress = func(done, total int64, tensor string) {
					if bar == nil {
						bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(cmd.ErrOrStderr()),
							progressbar.OptionSetDescription("quantizing"), progressbar.OptionSetWidth(30),
							progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond),
							progressbar.OptionOnCompletion(func() { fmt.Fprintln(cmd.ErrOrStderr()) }))
					}
					bar.Describe(fmt.Sprintf("%-28s", tensor))
					bar.Set64(done)
				}
			}
			start := time.Now()
			st, err := quantize.File(ctx, f, out, o)
			if errors.Is(err, quantize.ErrRequantize) {
				err = fmt.Errorf("%w; --allow-requantize dequantizes it and quantizes it again (worse than from the original)", err)
			}
			if bar != nil && !bar.IsFinished() {
				if err != nil {
					bar.Exit() // where it stopped: an interrupted run is not at 100 %
					fmt.Fprintln(cmd.ErrOrStderr())
				} else {
					bar.Finish()
				}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d tensors (%d quantized, %d with a fallback type), %.2f MiB -> %.2f MiB in %.1f s\n",
				out, st.Tensors, st.Quantized, st.Fallbacks, float64(st.BytesIn)/(1<<20), float64(st.BytesOut)/(1<<20), time.Since(start).Seconds())
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&imatrixPath, "imatrix", "", "importance matrix file from llama-imatrix (GGUF or .dat)")
	fl.BoolVar(&pure, "pure", false, "no mix rules: every quantizable tensor gets TYPE's default type")
	fl.BoolVar(&requantize, "allow-requantize", false, "accept an input that is already quantized (dequantized, then quantized again)")
	fl.IntVarP(&threads, "threads", "t", 0, "threads (0: all cores; the output does not depend on it)")
	fl.BoolVarP(&quiet, "quiet", "q", false, "no progress bar")
	return cmd
}

// sameFile reports whether the paths a and b name one file: the same
// path, or (when both exist) the same file through a symbolic link, a
// hard link or a linked directory. Comparing the absolute paths alone let
// `quantize dir/x.gguf link-to-dir/x.gguf` replace its input, and an
// output that is the input is renamed over it once written.
func sameFile(a, b string) bool {
	if absPath(a) == absPath(b) {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

func absPath(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}
