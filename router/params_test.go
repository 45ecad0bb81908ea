package router

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadTransferParams reads answers of every shape, one byte a read as well as whole, and
// compares with what encoding/json finds in the whole answer.
func TestReadTransferParams(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, answer, want string
		err                bool
	}{
		{name: "last member", answer: `{"id":"x","choices":[{"text":"a"}],"kv_transfer_params":{"remote_block_ids":[1,2],"remote_host":"h"}}`, want: `{"remote_block_ids":[1,2],"remote_host":"h"}`},
		{name: "first member, spaces", answer: " {\n \"kv_transfer_params\" : { \"a\" : [ 1 , { \"b\" : \"}]\" } ] } , \"x\": 1 }\n", want: `{ "a" : [ 1 , { "b" : "}]" } ] }`},
		{name: "none", answer: `{"choices":[{"text":"kv_transfer_params"}],"usage":{"kv_transfer_params":1}}`},
		{name: "null", answer: `{"kv_transfer_params":null}`, want: `null`},
		{name: "a scalar", answer: `{"kv_transfer_params":7}`, want: `7`},
		{name: "escaped quotes before it", answer: `{"a":"\"}\\","kv_transfer_params":{"k":"\\\""}}`, want: `{"k":"\\\""}`},
		{name: "an escaped key", answer: `{"kv\u005ftransfer_params":{"a":1}}`, want: `{"a":1}`},
		{name: "a longer key", answer: `{"kv_transfer_params_x":{"a":1}}`},
		{name: "duplicates: the last", answer: `{"kv_transfer_params":{"a":1},"kv_transfer_params":{"a":2}}`, want: `{"a":2}`},
		{name: "what follows the object", answer: `{"kv_transfer_params":{}} trailing`, want: `{}`},
		{name: "an array", answer: `[{"kv_transfer_params":{}}]`, err: true},
		{name: "cut short", answer: `{"kv_transfer_params":{"a":1}`, err: true},
		{name: "empty", answer: ``, err: true},
		{name: "params not JSON", answer: `{"kv_transfer_params":{"a":}}`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, one := range []bool{false, true} {
				r := strings.NewReader(tc.answer)
				got, err := readTransferParams(r)
				if one {
					got, err = readTransferParams(iotest.OneByteReader(strings.NewReader(tc.answer)))
				}
				if (err != nil) != tc.err || string(got) != tc.want {
					t.Errorf("readTransferParams(%q) (one byte a read: %v) = %q, %v; want %q, error %v", tc.answer, one, got, err, tc.want, tc.err)
				}
			}
		})
	}
}

// TestReadTransferParamsBoundsWhatItKeeps: params over MaxTransferParamsBytes are refused, not
// kept.
func TestReadTransferParamsBoundsWhatItKeeps(t *testing.T) {
	t.Parallel()
	answer := `{"kv_transfer_params":{"remote_block_ids":[` + strings.Repeat("1,", MaxTransferParamsBytes/2) + `1]}}`
	if _, err := readTransferParams(strings.NewReader(answer)); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("params of %d bytes: err = %v, want them refused as over the bound", len(answer), err)
	}
}

// FuzzReadTransferParams: on any answer that encoding/json reads as an object, the scanner
// finds the same kv_transfer_params; on any other, it never panics.
func FuzzReadTransferParams(f *testing.F) {
	for _, s := range []string{`{"kv_transfer_params":{"a":[1,"]"]}}`, `{"a":"\\","kv_transfer_params":null}`, `{}`, `[]`, `{"kv_transfer_params":1`, `{"x":{"kv_transfer_params":2}}`, `{"kv_transfer_param\u0073":3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, answer []byte) {
		got, err := readTransferParams(bytes.NewReader(answer))
		var obj map[string]json.RawMessage
		if json.Unmarshal(answer, &obj) != nil || obj == nil {
			return // not an object: the scanner may or may not notice (it does not read past the object)
		}
		want, ok := obj[transferKey]
		if len(want) > MaxTransferParamsBytes {
			return
		}
		if err != nil {
			if errors.Is(err, errAnswerShape) || ok {
				t.Fatalf("readTransferParams(%q) = %v, want %q", answer, err, want)
			}
			t.Fatalf("readTransferParams(%q) = %v", answer, err)
		}
		if !ok {
			want = nil
		}
		if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
			t.Fatalf("readTransferParams(%q) = %q, want %q", answer, got, want)
		}
	})
}
