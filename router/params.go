package router

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxTransferParamsBytes bounds the kv_transfer_params the router keeps of a prefill answer:
// the NixlConnector's are a few hundred bytes plus the block ids, eight bytes or so a block.
const MaxTransferParamsBytes = 4 << 20

// transferKey is the member of a prefill answer the router reads.
const transferKey = "kv_transfer_params"

// errAnswerShape is a prefill answer that is not one JSON object.
var errAnswerShape = errors.New("the answer is not a JSON object")

// readTransferParams reads a prefill answer as it arrives and returns the raw value of its
// top-level kv_transfer_params member (nil when it has none), keeping nothing else: an answer
// of any size (an echo of the prompt, prompt_logprobs) is read in constant memory. Reading
// stops where the object ends.
func readTransferParams(r io.Reader) (json.RawMessage, error) {
	var s transferScanner
	buf := make([]byte, 32<<10)
	for !s.done {
		n, err := r.Read(buf)
		if n > 0 {
			if werr := s.scan(buf[:n]); werr != nil {
				return nil, werr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return s.result()
}

// transferScanner follows the structure of a JSON object byte by byte (nesting, strings and
// their escapes, the top level's keys) and keeps the bytes of one member's value.
type transferScanner struct {
	depth    int  // of objects and arrays; 1 inside the answer's object
	inString bool // inside a string
	escaped  bool // after a backslash in a string
	keyPos   bool // at depth 1, the next string is a key
	inKey    bool // reading a key at depth 1
	key      []byte
	capture  bool // reading the value of transferKey
	found    bool
	value    []byte
	started  bool // the object has begun
	done     bool // the object has ended
}

// scan reads the next bytes of the answer.
func (s *transferScanner) scan(p []byte) error {
	for i := 0; i < len(p); i++ {
		if s.depth >= 2 && !s.capture {
			// Inside another member's value: most of a large answer, passed over quickly.
			if i += s.skip(p[i:]); i == len(p) {
				return nil
			}
		}
		b := p[i]
		if s.done {
			return nil // what follows the object is not read
		}
		if s.inString {
			switch {
			case s.escaped:
				s.escaped = false
			case b == '\\':
				s.escaped = true
			case b == '"':
				s.inString = false
			}
			switch {
			case s.inKey && !s.inString:
				s.inKey = false
			case s.inKey:
				if len(s.key) <= maxKeyBytes { // a longer key is another key
					s.key = append(s.key, b)
				}
			case s.capture:
				if err := s.keep(b); err != nil {
					return err
				}
			}
			continue
		}
		if s.depth == 0 {
			switch {
			case isSpace(b):
			case b == '{' && !s.started:
				s.started, s.depth, s.keyPos = true, 1, true
			default:
				return fmt.Errorf("%w: it starts with %q", errAnswerShape, p[i:min(i+16, len(p))])
			}
			continue
		}
		if s.depth == 1 {
			switch b {
			case '"':
				s.inString = true
				if s.keyPos {
					s.inKey, s.key = true, s.key[:0]
					continue
				}
			case ':':
				s.keyPos = false
				if s.isTransferKey() {
					s.capture, s.found, s.value = true, true, s.value[:0] // the last of duplicates wins, as in encoding/json
				}
				continue
			case ',':
				s.capture, s.keyPos = false, true
				continue
			case '}':
				s.capture, s.depth, s.done = false, 0, true
				continue
			case ']':
				return fmt.Errorf("%w: a ] closes its object", errAnswerShape)
			}
		}
		switch b {
		case '"':
			s.inString = true
		case '{', '[':
			s.depth++
		case '}', ']':
			s.depth--
		}
		if s.capture {
			if err := s.keep(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxKeyBytes is the longest key, as written, that may be transferKey: each of its characters
// escaped as \uXXXX.
const maxKeyBytes = 6 * len(transferKey)

// isTransferKey says whether the key just read is transferKey, as written or with escapes.
func (s *transferScanner) isTransferKey() bool {
	k := s.key
	if bytes.IndexByte(k, '\\') < 0 {
		return string(k) == transferKey
	}
	var name string
	return len(s.key) <= maxKeyBytes && json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &name) == nil && name == transferKey
}

// skip passes over the bytes of p that are nested in another member's value, up to the first
// that ends it (excluded), and returns how many it passed. It keeps its state in locals:
// this loop reads nearly every byte of a large answer.
func (s *transferScanner) skip(p []byte) int {
	depth, inString, escaped := s.depth, s.inString, s.escaped
	i := 0
	for ; i < len(p); i++ {
		b := p[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 2 {
				s.depth, s.inString, s.escaped = depth, inString, escaped
				return i // the scan closes the member's value
			}
			depth--
		}
	}
	s.depth, s.inString, s.escaped = depth, inString, escaped
	return i
}

// keep adds a byte of the captured value, within MaxTransferParamsBytes.
func (s *transferScanner) keep(b byte) error {
	if len(s.value) >= MaxTransferParamsBytes {
		return fmt.Errorf("its %s are over %d bytes", transferKey, MaxTransferParamsBytes)
	}
	s.value = append(s.value, b)
	return nil
}

// result is the captured value once the whole object was read.
func (s *transferScanner) result() (json.RawMessage, error) {
	if !s.done {
		return nil, fmt.Errorf("%w: it ended before its object did", errAnswerShape)
	}
	if !s.found {
		return nil, nil
	}
	v := bytes.TrimSpace(s.value)
	if !json.Valid(v) {
		return nil, fmt.Errorf("its %s are not JSON: %.200s", transferKey, v)
	}
	return v, nil
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }
