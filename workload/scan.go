package workload

import "bytes"

// scanChunk is the fast path of parseChunk: it reads the fields the client needs from a
// streamed chunk in one pass, without allocating. It handles the shapes servers send for
// every token; for anything else (error objects, escaped or case-folded keys, repeated
// fields, unusual types, invalid JSON) it returns ok false and the caller falls back to
// parseChunk. When ok is true the chunk is exactly what parseChunk returns (FuzzScanChunk
// checks this).
func scanChunk(b []byte) (c chunk, ok bool) {
	s := scanner{b: b}
	s.ws()
	if !s.byte('{') {
		return chunk{}, false
	}
	var seenChoices, seenUsage bool
	err := s.members(func(key []byte) bool {
		switch string(key) {
		case "choices":
			if seenChoices {
				return false
			}
			seenChoices = true
			return s.choices(&c)
		case "usage":
			if seenUsage {
				return false
			}
			seenUsage = true
			if s.null() {
				return true
			}
			c.usage = true
			return s.usage(&c)
		case "error":
			return s.null() // an error object goes the slow way
		case "object", "message":
			str, escaped, ok := s.str()
			if !ok {
				return s.null()
			}
			return !escaped && !bytes.Equal(str, []byte("error"))
		case "code":
			return s.skip(0)
		}
		if folds(key, "choices", "usage", "error", "object", "message", "code") {
			return false
		}
		return s.skip(0)
	})
	if !err {
		return chunk{}, false
	}
	s.ws()
	return c, s.i == len(s.b)
}

// scanner walks JSON text; every method returns false at anything it does not accept.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) byte(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// members reads an object's members after its '{', calling member with each key when the
// scanner sits at the value (white space skipped). Keys with escapes or non-ASCII bytes are
// refused. It consumes the closing '}'.
func (s *scanner) members(member func(key []byte) bool) bool {
	s.ws()
	if s.byte('}') {
		return true
	}
	for {
		s.ws()
		key, escaped, ok := s.str()
		if !ok || escaped {
			return false
		}
		for _, c := range key {
			if c >= 0x80 {
				return false
			}
		}
		s.ws()
		if !s.byte(':') {
			return false
		}
		s.ws()
		if !member(key) {
			return false
		}
		s.ws()
		if s.byte('}') {
			return true
		}
		if !s.byte(',') {
			return false
		}
	}
}

// str reads a string and returns its raw contents, whether it had escapes, and ok.
func (s *scanner) str() (raw []byte, escaped, ok bool) {
	if !s.byte('"') {
		return nil, false, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw = s.b[start:s.i]
			s.i++
			return raw, escaped, true
		case c == '\\':
			escaped = true
			if s.i+1 >= len(s.b) {
				return nil, false, false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) || !isHex4(s.b[s.i+2:s.i+6]) {
					return nil, false, false
				}
				s.i += 6
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		default:
			s.i++
		}
	}
	return nil, false, false
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// null consumes a null literal.
func (s *scanner) null() bool {
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// maxDepth bounds the nesting the scanner follows; deeper values go the slow way.
const maxDepth = 64

// skip consumes any JSON value.
func (s *scanner) skip(depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch c := s.peek(); {
	case c == '"':
		_, _, ok := s.str()
		return ok
	case c == '{':
		s.i++
		return s.members(func([]byte) bool { return s.skip(depth + 1) })
	case c == '[':
		s.i++
		return s.elements(func() bool { return s.skip(depth + 1) })
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.null()
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		s.i += len(lit)
		return true
	}
	return false
}

// elements reads an array's elements after its '[', calling element at each one. It
// consumes the closing ']'.
func (s *scanner) elements(element func() bool) bool {
	s.ws()
	if s.byte(']') {
		return true
	}
	for {
		s.ws()
		if !element() {
			return false
		}
		s.ws()
		if s.byte(']') {
			return true
		}
		if !s.byte(',') {
			return false
		}
	}
}

// number consumes a number in JSON's grammar.
func (s *scanner) number() bool {
	s.byte('-')
	switch {
	case s.byte('0'):
	case '1' <= s.peek() && s.peek() <= '9':
		s.digits()
	default:
		return false
	}
	if s.byte('.') {
		if !s.digits() {
			return false
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// integer reads a plain integer (no fraction or exponent) that fits an int.
func (s *scanner) integer() (int, bool) {
	neg := s.byte('-')
	start := s.i
	if !s.number() {
		return 0, false
	}
	digits := s.b[start:s.i]
	if len(digits) > 18 || len(digits) > 1 && digits[0] == '0' {
		return 0, false
	}
	n := 0
	for _, d := range digits {
		if d < '0' || d > '9' {
			return 0, false // a fraction or an exponent
		}
		n = n*10 + int(d-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// choices reads the choices array: content is set when a choice carries text, content or
// reasoning.
func (s *scanner) choices(c *chunk) bool {
	if s.null() {
		return true
	}
	if !s.byte('[') {
		return false
	}
	return s.elements(func() bool {
		if !s.byte('{') {
			return false
		}
		var seenText, seenDelta, seenFinish bool
		return s.members(func(key []byte) bool {
			switch string(key) {
			case "finish_reason":
				if seenFinish {
					return false
				}
				seenFinish = true
				if s.null() {
					return true
				}
				str, escaped, ok := s.str()
				if !ok || escaped {
					return false
				}
				c.finish = string(str)
				return true
			case "text":
				if seenText {
					return false
				}
				seenText = true
				return s.content(c)
			case "delta":
				if seenDelta {
					return false
				}
				seenDelta = true
				if s.null() {
					return true
				}
				if !s.byte('{') {
					return false
				}
				var seen [3]bool
				return s.members(func(key []byte) bool {
					i := -1
					switch string(key) {
					case "content":
						i = 0
					case "reasoning_content":
						i = 1
					case "reasoning":
						i = 2
					}
					if i >= 0 {
						if seen[i] {
							return false
						}
						seen[i] = true
						return s.content(c)
					}
					if folds(key, "content", "reasoning_content", "reasoning") {
						return false
					}
					return s.skip(2)
				})
			}
			if folds(key, "text", "delta", "finish_reason") {
				return false
			}
			return s.skip(1)
		})
	})
}

// content reads a string or null; a non-empty string marks the chunk as content.
func (s *scanner) content(c *chunk) bool {
	if s.null() {
		return true
	}
	raw, _, ok := s.str()
	if !ok {
		return false
	}
	if len(raw) > 0 {
		c.content = true
	}
	return true
}

// usage reads the usage object's token counts.
func (s *scanner) usage(c *chunk) bool {
	if !s.byte('{') {
		return false
	}
	var seenPrompt, seenCompletion bool
	return s.members(func(key []byte) bool {
		switch string(key) {
		case "prompt_tokens":
			if seenPrompt {
				return false
			}
			seenPrompt = true
			n, ok := s.integer()
			c.prompt = n
			return ok
		case "completion_tokens":
			if seenCompletion {
				return false
			}
			seenCompletion = true
			n, ok := s.integer()
			c.completed = n
			return ok
		}
		if folds(key, "prompt_tokens", "completion_tokens") {
			return false
		}
		return s.skip(1)
	})
}

// folds reports whether key matches one of names ignoring case, as encoding/json matches
// keys to fields, without being one of them exactly.
func folds(key []byte, names ...string) bool {
	// The names are lower case: only a key with an upper-case letter can fold onto one.
	upper := false
	for _, c := range key {
		if 'A' <= c && c <= 'Z' {
			upper = true
			break
		}
	}
	if !upper {
		return false
	}
	for _, n := range names {
		if string(key) != n && bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}
