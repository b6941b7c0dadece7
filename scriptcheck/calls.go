package scriptcheck

import (
	"strings"
)

// redisCall analyses redis.call / redis.pcall: it records a site for each
// key the command deletes, expires, overwrites or creates, and returns the
// command's reply as a value (GET's reply remembers its key, for compares).
func (a *analyzer) redisCall(line int, al argList, fs facts) val {
	if len(al.vals) == 0 {
		a.unknownCall(line, "", "its command name is not a literal", al, fs)
		a.mayFlush(line)
		return data
	}
	name, ok := al.vals[0].constString()
	args := al.from(1)
	if !ok || al.vals[0].kind != vStr {
		a.unknownCall(line, "", "its command name is not a literal", args, fs)
		a.mayFlush(line)
		return data
	}
	cmd := strings.ToUpper(name)
	spec, known := lookupCommand(cmd)
	if !known {
		a.unknownCall(line, cmd, "lockproxy's analysis does not know the command "+cmd, args, fs)
		return data
	}
	if spec.pos == posFlush {
		a.flushes = append(a.flushes, Site{Line: line, Command: cmd, Op: OpDelete, Target: Target{Kind: TargetAny},
			Verdict: Blind, Reason: cmd + " deletes every key of a database, lock keys included"})
		return data
	}
	v := args.vals
	arg := func(i int) (val, bool) {
		if i < len(v) {
			return v[i], true
		}
		if args.spread.kind != vNil {
			return spreadElem(args.spread, i-len(v)), true
		}
		return nilV, false
	}
	k, hasKey := arg(0)
	switch spec.pos {
	case posNone:
		return data
	case posFirst:
		if !hasKey {
			return data
		}
		if spec.op != OpNone {
			a.site(line, cmd, k, spec.op, fs, 0, "")
		}
		switch cmd {
		case "GETRANGE", "SUBSTR":
			if s, ok := arg(1); ok && s.kind == vNum && s.num >= 0 {
				if e, ok := arg(2); ok && e.kind == vNum && e.num >= 0 && e.num < s.num {
					return strConst("") // an empty range: no part of the value to compare
				}
			}
			return readOf(k, vRead)
		case "GET":
			// GETRANGE: a prefix of the value, compared with a prefix of
			// the token (re-entrant obtain shapes).
			return readOf(k, vRead)
		case "HGET", "HEXISTS":
			f, _ := arg(1)
			kind := vField
			if cmd == "HEXISTS" {
				kind = vFieldExists
			}
			r := readOf(k, kind)
			r.arg = f.argLike()
			return r
		case "SETNX", "HSETNX":
			return readOf(k, vCreated)
		}
		return data
	case posAll:
		if spec.op != OpNone {
			for _, x := range v {
				a.site(line, cmd, x, spec.op, fs, 0, "")
			}
			if args.spread.kind != vNil {
				a.site(line, cmd, args.spread, spec.op, fs, 0, "")
			}
		}
		switch cmd {
		case "EXISTS":
			if len(v) == 1 && args.spread.kind == vNil {
				return readOf(v[0], vExists)
			}
		case "MGET":
			if len(v) == 0 && args.spread.kind == vKeys && args.spread.start == 1 {
				return val{kind: vMulti, all: true}
			}
			if args.spread.kind == vNil {
				return val{kind: vMulti, elems: v}
			}
		}
		return data
	case posSpecs:
		for _, r := range spec.ranges {
			a.rangeSites(line, cmd, r, args, fs)
		}
		return data
	case posPairs:
		for i := 0; i < len(v); i += 2 {
			a.site(line, cmd, v[i], spec.op, fs, 0, "")
		}
		if args.spread.kind != vNil {
			a.site(line, cmd, args.spread, spec.op, fs, 0, "")
		}
		return data
	}
	if !hasKey {
		return data
	}
	// posSpecial
	switch cmd {
	case "SET":
		return a.setCmd(line, k, args, fs)
	case "GETEX":
		if len(v) > 1 || args.spread.kind != vNil {
			a.site(line, cmd, k, OpExpire, fs, 0, "")
		}
		return readOf(k, vRead)
	case "HDEL":
		fields := args.from(1)
		own := len(fields.vals) > 0 && fields.spread.kind == vNil
		for _, f := range fields.vals {
			own = own && f.argLike()
		}
		if own {
			a.site(line, cmd, k, OpDelete, fs, Guarded, "it deletes only hash fields the arguments name (the caller's owner field)")
		} else {
			a.site(line, cmd, k, OpDelete, fs, 0, "")
		}
	case "DELIFEQ":
		if c, _ := arg(1); c.argLike() {
			a.site(line, cmd, k, OpDelete, fs, Guarded, "DELIFEQ deletes it only while it holds the argument")
		} else {
			a.site(line, cmd, k, OpDelete, fs, 0, "")
		}
	case "COPY", "RENAME", "RENAMENX", "SMOVE", "LMOVE", "RPOPLPUSH":
		dst, ok := arg(1)
		switch cmd {
		case "COPY":
			if ok {
				op := OpCreate
				for _, o := range args.from(2).vals {
					s, isConst := o.constString()
					switch {
					case !isConst:
						op = OpOther
					case strings.EqualFold(s, "REPLACE") && op != OpOther:
						op = OpOverwrite
					}
				}
				if args.from(2).spread.kind != vNil {
					op = OpOther
				}
				why := ""
				if op == OpOther {
					why = "COPY's options are not literals, so it may replace the target"
				}
				a.site(line, cmd, dst, op, fs, 0, why)
			}
		case "RENAME", "RENAMENX":
			a.site(line, cmd, k, OpDelete, fs, 0, "")
			if ok {
				op := OpOverwrite
				if cmd == "RENAMENX" {
					op = OpCreate
				}
				a.site(line, cmd, dst, op, fs, 0, "")
			}
		default:
			a.site(line, cmd, k, OpOverwrite, fs, 0, "")
			if ok {
				a.site(line, cmd, dst, OpOverwrite, fs, 0, "")
			}
		}
	}
	return data
}

// rangeSites records the sites of one key range derived from a key spec
// (keyRange): its arguments known one by one, and the rest of a spread
// (unpack(ARGV)) when the range reaches into it.
func (a *analyzer) rangeSites(line int, cmd string, r keyRange, args argList, fs facts) {
	if r.op == OpNone {
		return
	}
	v, spread := args.vals, args.spread.kind != vNil
	end := len(v) - 1 // the last index of v the range covers
	switch {
	case r.last >= 0:
		end = min(r.last-1, end)
	case !spread:
		end = len(v) + r.last
	}
	for i := max(r.first-1, 0); i <= end; i += r.step {
		a.site(line, cmd, v[i], r.op, fs, 0, "")
	}
	if spread && (r.last < 0 || r.last > len(v)) {
		a.site(line, cmd, args.spread, r.op, fs, 0, "")
	}
}

// mayFlush: a command whose name is not a literal may be FLUSHALL, FLUSHDB
// or SWAPDB.
func (a *analyzer) mayFlush(line int) {
	a.flushes = append(a.flushes, Site{Line: line, Op: OpOther, Target: Target{Kind: TargetAny}, Verdict: Unknown,
		Reason: "its command name is not a literal, so it may be FLUSHALL, FLUSHDB or SWAPDB"})
}

// set: SET key value [NX|XX] [GET] [EX|PX|EXAT|PXAT n|KEEPTTL] [IFEQ v].
func (a *analyzer) setCmd(line int, k val, args argList, fs facts) val {
	var nx, ifeq, dynamic bool
	opts := args.from(2)
	if len(args.vals) < 2 || opts.spread.kind != vNil {
		dynamic = true
	}
	for i := 0; i < len(opts.vals); i++ {
		s, ok := opts.vals[i].constString()
		if !ok {
			dynamic = true
			continue
		}
		switch strings.ToUpper(s) {
		case "NX":
			nx = true
		case "EX", "PX", "EXAT", "PXAT":
			i++
		case "IFEQ":
			i++
			ifeq = i < len(opts.vals) && opts.vals[i].argLike()
		}
	}
	switch {
	case nx:
		a.site(line, "SET", k, OpCreate, fs, 0, "")
		return readOf(k, vCreated)
	case ifeq:
		a.site(line, "SET", k, OpOverwrite, fs, Guarded, "SET ... IFEQ overwrites it only while it holds the argument")
	case dynamic:
		a.site(line, "SET", k, OpOther, fs, 0, "SET's options are not literals, so it may overwrite the key without NX")
	default:
		a.site(line, "SET", k, OpOverwrite, fs, 0, "")
	}
	return data
}

// unknownCall: a command the analysis cannot read (its name is not a
// literal, or it is not in the table). Every argument that may name a key
// gets an Unknown site, unless the key is guarded where the call runs; a
// constant argument too (the proxy resolves the name against the rules).
func (a *analyzer) unknownCall(line int, cmd, why string, al argList, fs facts) {
	for _, v := range append(append([]val(nil), al.vals...), al.spread) {
		switch v.kind {
		case vStr, vIterKey, vTop, vArgData, vKeys, vArgv, vCalc:
		default:
			continue
		}
		a.site(line, cmd, v, OpOther, fs, 0, why)
	}
}

// target: which key a value names, and its identity for facts.
func target(k val) (Target, sym, bool) {
	switch k.kind {
	case vStr:
		if len(k.parts) == 1 && k.parts[0].Kind == PartKey {
			return Target{Kind: TargetKey, Index: k.parts[0].Index}, sym{kind: symKey, n: k.parts[0].Index}, true
		}
		s, _ := symOf(k)
		return Target{Kind: TargetName, Parts: k.parts}, s, true
	case vIterKey:
		return Target{Kind: TargetKeysFrom, Index: k.start}, k.s, true
	case vKeys:
		return Target{Kind: TargetKeysFrom, Index: k.start}, sym{kind: symAll}, true
	case vArgv:
		return Target{Kind: TargetArgsFrom, Index: k.start}, sym{kind: symName, name: "\x00ARGV*"}, true
	case vTop, vArgData, vCalc:
		return Target{Kind: TargetAny}, sym{}, true
	case vNum:
		return target(strConst(formatNum(k.num)))
	}
	// Stored data (a name read from a key) is not followed; nil, booleans
	// and tables are no key names (Valkey refuses them as arguments).
	return Target{}, sym{}, false
}

// site records what a call does to the key k names, and the verdict that
// earns under the facts where it runs. force, when set, is the verdict
// (with reason) the command itself guarantees.
func (a *analyzer) site(line int, cmd string, k val, op Op, fs facts, force Verdict, reason string) {
	t, s, ok := target(k)
	if !ok {
		return
	}
	subject := cmd
	if subject == "" {
		subject = "the call"
	}
	v := force
	switch {
	case force != 0:
	case op == OpCreate:
		v, reason = Acquire, subject+" creates "+t.String()+" only if it does not exist"
	case t.Kind == TargetAny:
		v = Unknown
		if reason == "" {
			reason = "cannot tell which key " + subject + " " + op.Verb()
		} else {
			reason = "cannot tell which key " + subject + " changes, and " + reason
		}
	default:
		did := subject + " " + op.Verb() + " " + t.String()
		switch fs.get(s) {
		case fGuard:
			v, reason = Guarded, did+" only after its value (or owner field) was compared with an argument"
		case fEither:
			v, reason = Guarded, did+" only while it does not exist or after its owner field (or value) was compared with an argument"
		case fFresh:
			v, reason = Acquire, did+" only while it does not exist"
		default:
			if k.kind == vIterKey && k.b {
				v, reason = Unknown, "cannot tell which key of KEYS "+subject+" "+op.Verb()+": its index is computed"
				break
			}
			if op == OpOther {
				v, reason = Unknown, subject+" may change "+t.String()+": "+reason
			} else {
				v = Blind
				reason = subject + " " + op.Verb() + " " + t.String() + " without first comparing its value (or owner field) with an argument"
			}
		}
	}
	a.sites = append(a.sites, Site{Line: line, Command: cmd, Op: op, Target: t, Verdict: v, Reason: reason})
}
