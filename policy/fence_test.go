package policy

import "testing"

func TestFenceTemplates(t *testing.T) {
	for _, tc := range []struct {
		pattern, counter, guard string
		lock                    string
		wantCounter             string
		guarded, notGuarded     []string
	}{
		{"{*}:lock", "{base}:fence", "{base}:*", "{user:1}:lock", "{user:1}:fence",
			[]string{"{user:1}:data", "{user:1}:x:y"}, []string{"{user:2}:data", "user:1:data", "other"}},
		{"*:lock", "{base}:fence", "{base}:data", "job7:lock", "job7:fence",
			[]string{"job7:data"}, []string{"job8:data", "job7:datax"}},
		{"lock:*", "fence:{base}", "res:{base}", "lock:a*b", "fence:a*b",
			[]string{"res:a*b"}, []string{"res:aXb"}},
		{"locks:{*}", "{base}:n", "{base}:w:*", "locks:{q}", "{q}:n",
			[]string{"{q}:w:1"}, []string{"{r}:w:1"}},
		{"*:lock", "{key}:fence", "{key}:res", "a:lock", "a:lock:fence",
			[]string{"a:lock:res"}, []string{"b:lock:res"}},
	} {
		rules, err := NewRules([]LockRule{{Pattern: tc.pattern, Fence: &FenceConfig{Counter: tc.counter, Guards: []string{tc.guard}}}})
		if err != nil {
			t.Fatalf("%s: %v", tc.pattern, err)
		}
		r := &rules.All()[0]
		f := r.Fencing
		if got := string(f.CounterKey(r, []byte(tc.lock))); got != tc.wantCounter {
			t.Errorf("%s: counter of %q = %q, want %q", tc.pattern, tc.lock, got, tc.wantCounter)
		}
		for _, k := range tc.guarded {
			if !f.MayGuard([]byte(k)) || !f.GuardsKey(r, []byte(tc.lock), []byte(k)) {
				t.Errorf("%s: %q should be guarded by %q (any=%v)", tc.pattern, k, tc.lock, f.MayGuard([]byte(k)))
			}
		}
		for _, k := range tc.notGuarded {
			if f.GuardsKey(r, []byte(tc.lock), []byte(k)) {
				t.Errorf("%s: %q should not be guarded by %q", tc.pattern, k, tc.lock)
			}
		}
	}
}

func TestFenceValidation(t *testing.T) {
	for _, tc := range []struct{ pattern, counter, guard, want string }{
		{"{*}:lock", "fence:{base}", "{base}:*", ""}, // fence:{user:1} keeps the tag
		{"{*}:lock", "{x}{base}", "{base}:*", "outside the lock's hash slot"},
		{"{*}:lock", "{base}:fence", "data:*", "has no {base} or {key}"},
		{"{*}:lock", "{base}:fence", "{other}:{base}", "outside the lock's hash slot"},
		{"*:lock", "fence", "{base}:*", "has no {base} or {key}"},
	} {
		_, err := NewRules([]LockRule{{Pattern: tc.pattern, Fence: &FenceConfig{Counter: tc.counter, Guards: []string{tc.guard}}}})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %s %s: unexpected error %v", tc.pattern, tc.counter, tc.guard, err)
		case tc.want != "" && (err == nil || !contains(err.Error(), tc.want)):
			t.Errorf("%s %s %s: error %v, want %q", tc.pattern, tc.counter, tc.guard, err, tc.want)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
