package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// sseReader reads the data payloads of a server-sent event stream. Each "data:" line is one
// payload, as OpenAI-compatible servers send them; other fields, comments and blank lines are
// skipped.
type sseReader struct {
	br   *bufio.Reader
	long []byte // a line longer than the buffer, assembled
}

// sseBufferSize is the read buffer of a stream; longer lines are assembled in sseReader.long.
const sseBufferSize = 16 << 10

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, sseBufferSize)}
}

// reset makes s read r, keeping its buffers.
func (s *sseReader) reset(r io.Reader) {
	s.br.Reset(r)
	s.long = s.long[:0]
}

// maxSSELine bounds one line of the stream; a longer line is a malformed stream.
const maxSSELine = 16 << 20

// errLineTooLong is returned for a line over maxSSELine.
var errLineTooLong = errors.New("an event stream line is longer than 16 MiB")

// next returns the next payload. The slice is valid until the next call. At the end of the
// stream it returns io.EOF.
func (s *sseReader) next() ([]byte, error) {
	for {
		line, err := s.line()
		if err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		payload, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // blank line, comment, event:, id:, retry:
		}
		if len(payload) > 0 && payload[0] == ' ' {
			payload = payload[1:]
		}
		return payload, nil
	}
}

// line returns the next line, with its newline when it has one. A last line without a
// newline is returned before io.EOF.
func (s *sseReader) line() ([]byte, error) {
	line, err := s.br.ReadSlice('\n')
	if err == nil {
		return line, nil
	}
	if errors.Is(err, bufio.ErrBufferFull) {
		s.long = append(s.long[:0], line...)
		for {
			more, err := s.br.ReadSlice('\n')
			s.long = append(s.long, more...)
			if len(s.long) > maxSSELine {
				return nil, errLineTooLong
			}
			if err == nil {
				return s.long, nil
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				if errors.Is(err, io.EOF) && len(s.long) > 0 {
					return s.long, nil
				}
				return nil, err
			}
		}
	}
	if errors.Is(err, io.EOF) && len(line) > 0 {
		return line, nil
	}
	return nil, err
}

// chunk is what the client needs from one streamed JSON object.
type chunk struct {
	content   bool   // a choice carries text, content or reasoning
	finish    string // a choice's finish_reason, when it has one
	usage     bool   // the object has usage counts
	prompt    int    // usage.prompt_tokens
	completed int    // usage.completion_tokens
	isError   bool   // the object is an error report
	errMsg    string
	errCode   int
}

// chunkJSON mirrors the fields of OpenAI's completion and chat chunks that are used.
type chunkJSON struct {
	Choices []struct {
		FinishReason *string `json:"finish_reason"`
		Text         *string `json:"text"`
		Delta        *struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			Reasoning        *string `json:"reasoning"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
	// vLLM's error objects carry these at the top level as well.
	Object  string          `json:"object"`
	Message string          `json:"message"`
	Code    json.RawMessage `json:"code"`
}

// parseChunk reads one payload of the stream: scanChunk for the usual shapes, encoding/json
// for the rest.
func parseChunk(b []byte) (chunk, error) {
	if c, ok := scanChunk(b); ok {
		return c, nil
	}
	return decodeChunk(b)
}

// decodeChunk reads one payload with encoding/json.
func decodeChunk(b []byte) (chunk, error) {
	var j chunkJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return chunk{}, fmt.Errorf("an event is not a JSON object: %w", err)
	}
	var c chunk
	if len(j.Error) > 0 && !bytes.Equal(j.Error, []byte("null")) {
		c.isError = true
		var e struct {
			Message string          `json:"message"`
			Code    json.RawMessage `json:"code"`
		}
		if json.Unmarshal(j.Error, &e) == nil {
			c.errMsg, c.errCode = e.Message, httpCode(e.Code)
		} else {
			c.errMsg = string(j.Error)
		}
	} else if j.Object == "error" {
		c.isError = true
		c.errMsg, c.errCode = j.Message, httpCode(j.Code)
	}
	for _, ch := range j.Choices {
		if nonEmpty(ch.FinishReason) {
			c.finish = *ch.FinishReason
		}
		if ch.Text != nil && *ch.Text != "" {
			c.content = true
		}
		if d := ch.Delta; d != nil && (nonEmpty(d.Content) || nonEmpty(d.ReasoningContent) || nonEmpty(d.Reasoning)) {
			c.content = true
		}
	}
	if j.Usage != nil {
		c.usage = true
		c.prompt, c.completed = j.Usage.PromptTokens, j.Usage.CompletionTokens
	}
	return c, nil
}

func nonEmpty(s *string) bool { return s != nil && *s != "" }

// httpCode reads an error's code when it is an HTTP status (a number or a numeric string).
func httpCode(raw json.RawMessage) int {
	var n int
	if json.Unmarshal(raw, &n) == nil && n >= 100 && n <= 599 {
		return n
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if _, err := fmt.Sscanf(s, "%d", &n); err == nil && n >= 100 && n <= 599 {
			return n
		}
	}
	return 0
}
