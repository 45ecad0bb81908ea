// Package kubelettest is a stand-in for the one part of the kubelet that frontier's manifests
// depend on and that cannot run here: how it expands a container's command, args and env
// values. Tests use it to read an export or a Job as a pod would see it.
package kubelettest

import "strings"

// Expand expands s as the kubelet expands a container's command, args and env values
// (k8s.io/api/core/v1, Container.Args): $$ is a $, $(NAME) is the variable's value when env
// defines it and is left as it is otherwise, an unterminated $( stays, and any other $ stays.
func Expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteByte('$')
				continue
			}
			if v, ok := env[s[i+2:i+2+end]]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
