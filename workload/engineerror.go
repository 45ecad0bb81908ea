package workload

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on what is kept of a server's refusal of a request.
const (
	// MaxErrorBody is how much of a refused request's response body is read.
	MaxErrorBody = 8 << 10
	// MaxErrorMessage is how many characters of the server's message a Record keeps.
	MaxErrorMessage = 400
)

// engineMessage is the reason in the body of a response other than 200: the "message" of
// vLLM's ErrorResponse ({"error": {"message": ...}}, or {"message": ...} in older releases),
// the "detail" of a FastAPI error, else the body as text. It is made one line of printable
// text (control characters and invalid UTF-8 replaced, white space collapsed) of at most
// MaxErrorMessage characters, so that what a server sends cannot reach a terminal or a
// report raw.
func engineMessage(body []byte) string {
	body = bytes.TrimSpace(body)
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message *string         `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	msg := string(body)
	if json.Unmarshal(body, &e) == nil {
		var nested struct {
			Message *string `json:"message"`
		}
		var flat string
		switch {
		case len(e.Error) > 0 && json.Unmarshal(e.Error, &nested) == nil && nested.Message != nil:
			msg = *nested.Message
		case len(e.Error) > 0 && json.Unmarshal(e.Error, &flat) == nil:
			msg = flat
		case e.Message != nil:
			msg = *e.Message
		case len(e.Detail) > 0 && json.Unmarshal(e.Detail, &flat) == nil:
			msg = flat
		case len(e.Detail) > 0:
			msg = string(e.Detail)
		}
	}
	return cleanText(msg, MaxErrorMessage)
}

// cleanText makes s one line of printable text of at most n characters (an ellipsis marks a
// cut): invalid UTF-8 and control characters become U+FFFD or a space, runs of white space
// one space.
func cleanText(s string, n int) string {
	var b strings.Builder
	space, count := false, 0
	for len(s) > 0 && count < n {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case r == utf8.RuneError || !unicode.IsPrint(r):
			r = utf8.RuneError
		}
		if space {
			b.WriteByte(' ')
			count++
			space = false
		}
		b.WriteRune(r)
		count++
	}
	if strings.TrimSpace(s) != "" {
		b.WriteString("…")
	}
	return b.String()
}
