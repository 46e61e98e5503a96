package api

import (
	"errors"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestDecodeHyperparameterNamesField: a fine-tuning hyperparameter that is
// neither "auto" nor a number is a 400 whose param names it, like any
// other field of the wrong type; it was a bare `invalid request: must be
// "auto" or a number` naming no field.
func TestDecodeHyperparameterNamesField(t *testing.T) {
	for _, tc := range []struct{ body, param, msg string }{
		{`{"hyperparameters":{"n_epochs":"three"}}`, "hyperparameters.n_epochs", `field "hyperparameters.n_epochs" must be "auto" or a number, not string`},
		{`{"hyperparameters":{"batch_size":{}}}`, "hyperparameters.batch_size", `must be "auto" or a number, not object`},
		{`{"hyperparameters":{"lora_rank":[8]}}`, "hyperparameters.lora_rank", `not array`},
		{`{"hyperparameters":{"learning_rate_multiplier":true}}`, "hyperparameters.learning_rate_multiplier", `not bool`},
		{`{"method":{"type":"supervised","supervised":{"hyperparameters":{"n_epochs":"x"}}}}`, "method.supervised.hyperparameters.n_epochs", `not string`},
	} {
		var v ipc.FineTuningJobCreate
		err := decodeString(tc.body, &v)
		var re *requestError
		if !errors.As(err, &re) || re.status != 400 || re.param != tc.param || !strings.Contains(re.msg, tc.msg) {
			t.Errorf("%s: got %#v, want 400 naming %s with %q", tc.body, err, tc.param, tc.msg)
		}
	}
	var v ipc.FineTuningJobCreate
	if err := decodeString(`{"hyperparameters":{"n_epochs":"auto","batch_size":4}}`, &v); err != nil || !v.Hyperparameters.NEpochs.Auto || v.Hyperparameters.BatchSize.Value != 4 {
		t.Fatalf("valid hyperparameters: %+v %v", v.Hyperparameters, err)
	}
}
