package kubelettest

import "testing"

func TestExpandFollowsTheKubeletsRules(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HOME": "/root", "TOKEN": "t"}
	tests := []struct{ name, in, want string }{
		{"a defined variable", "$(HOME)/x", "/root/x"},
		{"an undefined variable stays", "$(NOPE)", "$(NOPE)"},
		{"$$ is one $", "$$(HOME) $$", "$(HOME) $"},
		{"a lone $ stays", "a$b $", "a$b $"},
		{"an unterminated $( stays", "$(HOME", "$(HOME"},
		{"two in a row", "$(TOKEN)$(TOKEN)", "tt"},
	}
	for _, tc := range tests {
		if got := Expand(tc.in, env); got != tc.want {
			t.Errorf("%s: Expand(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}
