package scriptcheck

import (
	"strings"
)

// The function cache learns only what Valkey accepted. A FUNCTION LOAD,
// DELETE, FLUSH or RESTORE is proposed when the proxy sends it and settled
// with its reply: accepted (a reply that is not an error, at EXEC for a
// queued one) it changes the cache; refused, or never run (a transaction
// discarded or aborted), it changes nothing. Until a load or restore is
// settled, an FCALL of a function it defines is judged by the worse of its
// analysis and the one known before, so that a pipelined FCALL cannot
// slip between the two.

// maxPending bounds the loads awaiting their reply; the oldest goes first
// (its reply was lost with a discarded transaction).
const maxPending = 32

// FunctionChange is one FUNCTION LOAD, DELETE, FLUSH or RESTORE on its way
// to Valkey.
type FunctionChange struct {
	libs       []*Library // LOAD (one), RESTORE (each library of the payload)
	delete     string     // DELETE's library
	flush      bool       // FLUSH, or RESTORE ... FLUSH
	unreadable bool       // RESTORE of a payload lockproxy cannot read
}

// ProposeLoad is a FUNCTION LOAD [REPLACE] body.
func (c *Cache) ProposeLoad(body []byte) *FunctionChange {
	return c.propose(&FunctionChange{libs: []*Library{AnalyzeLibrary(string(body))}})
}

// ProposeRestore is a FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE].
func (c *Cache) ProposeRestore(payload []byte, policy string) *FunctionChange {
	ch := &FunctionChange{flush: strings.EqualFold(policy, "flush")}
	bodies, ok := DumpLibraries(payload)
	ch.unreadable = !ok
	for _, b := range bodies {
		ch.libs = append(ch.libs, AnalyzeLibrary(b))
	}
	return c.propose(ch)
}

// ProposeDelete is a FUNCTION DELETE name.
func (c *Cache) ProposeDelete(name []byte) *FunctionChange {
	return &FunctionChange{delete: string(name)}
}

// ProposeFlush is a FUNCTION FLUSH.
func (c *Cache) ProposeFlush() *FunctionChange { return &FunctionChange{flush: true} }

func (c *Cache) propose(ch *FunctionChange) *FunctionChange {
	c.fmu.Lock()
	if len(c.pending) >= maxPending {
		c.pending = append(c.pending[:0], c.pending[1:]...)
	}
	c.pending = append(c.pending, ch)
	c.fmu.Unlock()
	return ch
}

// Settle applies a change Valkey accepted, or drops one it refused.
func (c *Cache) Settle(ch *FunctionChange, accepted bool) {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	for i, p := range c.pending {
		if p == ch {
			c.pending = append(c.pending[:i], c.pending[i+1:]...)
			break
		}
	}
	if !accepted {
		return
	}
	if ch.flush {
		c.funcs = map[string]*Report{}
		c.libs = map[string][]string{}
		c.unreadable = false
	}
	if ch.delete != "" {
		c.dropLibrary(ch.delete)
	}
	c.unreadable = c.unreadable || ch.unreadable
	for _, lib := range ch.libs {
		c.addLibrary(lib)
	}
}

// LoadLibrary records a library Valkey accepted (FUNCTION LOAD), analysed
// function by function.
func (c *Cache) LoadLibrary(body []byte) *Library {
	ch := &FunctionChange{libs: []*Library{AnalyzeLibrary(string(body))}}
	c.Settle(ch, true)
	return ch.libs[0]
}

// addLibrary replaces the library of the same name (Valkey accepted the
// load, so no other library defines its functions). Called with fmu held.
func (c *Cache) addLibrary(lib *Library) {
	if lib.Name == "" {
		return
	}
	c.dropLibrary(lib.Name)
	names := make([]string, 0, len(lib.Functions))
	for name, r := range lib.Functions {
		k := strings.ToLower(name)
		if old, ok := c.funcs[k]; ok {
			// Two functions of one library whose names differ only in
			// case: FCALL reaches one of them, either may be it.
			r = worse(old, r)
		} else {
			names = append(names, k)
		}
		c.funcs[k] = r
	}
	c.libs[lib.Name] = names
	// Bounded: forget whole libraries (any) until under the bound.
	for name := range c.libs {
		if len(c.funcs) <= c.maxFuncs {
			break
		}
		if name != lib.Name {
			c.dropLibrary(name)
		}
	}
}

func (c *Cache) dropLibrary(name string) {
	for _, f := range c.libs[name] {
		delete(c.funcs, f)
	}
	delete(c.libs, name)
}

// Function returns the analysis of a function by name (FCALL, which finds
// functions whatever the letter case), or nil when its library was not
// seen loaded.
func (c *Cache) Function(name []byte) *Report {
	c.fmu.RLock()
	defer c.fmu.RUnlock()
	r, ok := c.funcs[string(name)]
	if !ok && hasUpper(name) {
		r = c.funcs[strings.ToLower(string(name))]
	}
	for _, ch := range c.pending {
		if ch.unreadable {
			r = worse(r, unreadableReport(name))
		}
		for _, lib := range ch.libs {
			if lib.Err != "" {
				continue // Valkey will refuse it, or it defines nothing lockproxy can name
			}
			for fn, pr := range lib.Functions {
				if strings.EqualFold(fn, string(name)) {
					r = worse(r, pr)
				}
			}
		}
	}
	if r == nil && c.unreadable {
		return unreadableReport(name)
	}
	return r
}

func unreadableReport(name []byte) *Report {
	return &Report{Function: string(name), Library: "?",
		Err: "a FUNCTION RESTORE lockproxy could not read was accepted, and the function may come from it"}
}

// worse combines two analyses of what may be the same function: each key
// gets the worse verdict of the two.
func worse(a, b *Report) *Report {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	out := &Report{SHA: a.SHA, Function: a.Function, Library: a.Library, Err: a.Err, ErrLine: a.ErrLine}
	if out.Err == "" {
		out.Err, out.ErrLine = b.Err, b.ErrLine
	}
	out.setSites(append(append([]Site(nil), a.Sites...), b.Sites...))
	out.Flushes = append(append([]Site(nil), a.Flushes...), b.Flushes...)
	return out
}
