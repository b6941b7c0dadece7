package admin

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/lockproxy/lockproxy/config"
)

// liveSetting reports whether a reload applies the setting at key (a
// config path) at once; every other change needs a restart. log.level is
// live only when the logger's level is a LevelVar.
func liveSetting(key string, logLevelLive bool) bool {
	switch {
	case key == "locks" || strings.HasPrefix(key, "locks["), key == "on_flush", key == "admin_commands", key == "keep_lapsed", key == "admin.password",
		strings.HasPrefix(key, "admin.users["), strings.HasPrefix(key, "slowlog."):
		return true
	case key == "log.level":
		return logLevelLive
	}
	return false
}

// RestartNeeded lists the settings that differ between the running and the
// next configuration and cannot change live, by their config path, in file
// order (those only the running one has last).
func RestartNeeded(running, next *config.Config, logLevelLive bool) []string {
	a := map[string]string{}
	for _, f := range ConfigFields(running, false) {
		a[f.K] = f.V.(string)
	}
	out := []string{}
	seen := map[string]bool{}
	for _, f := range ConfigFields(next, false) {
		seen[f.K] = true
		if a[f.K] != f.V.(string) && !liveSetting(f.K, logLevelLive) {
			out = append(out, f.K)
		}
	}
	for _, f := range ConfigFields(running, false) {
		if !seen[f.K] && !liveSetting(f.K, logLevelLive) {
			out = append(out, f.K)
		}
	}
	return out
}

// ConfigFields flattens a configuration into (path, value) pairs in file
// order: "upstream.addr", "locks[0].pattern", ... Values are strings; sizes
// and durations as the file writes them. With redact, every non-empty
// secret reads "(redacted)".
func ConfigFields(c *config.Config, redact bool) []Field {
	if redact {
		c = c.Redacted()
	}
	var out []Field
	flattenValue("", reflect.ValueOf(c).Elem(), redact, &out)
	return out
}

var stringer = reflect.TypeFor[fmt.Stringer]()

func flattenValue(path string, v reflect.Value, redact bool, out *[]Field) {
	if v.Type().Implements(stringer) && v.Kind() != reflect.Pointer && v.Kind() != reflect.Struct {
		*out = append(*out, Field{path, v.Interface().(fmt.Stringer).String()})
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			flattenValue(path, v.Elem(), redact, out)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
			if !sf.IsExported() || name == "" || name == "-" {
				continue
			}
			if path != "" {
				name = path + "." + name
			}
			fv := v.Field(i)
			if redact && fv.Kind() == reflect.String && fv.String() != "" && secretName(sf.Name) {
				*out = append(*out, Field{name, config.Redacted})
				continue
			}
			flattenValue(name, fv, redact, out)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Struct {
			for i := 0; i < v.Len(); i++ {
				flattenValue(fmt.Sprintf("%s[%d]", path, i), v.Index(i), redact, out)
			}
			return
		}
		parts := make([]string, v.Len())
		for i := range parts {
			var one []Field
			flattenValue("", v.Index(i), redact, &one)
			if len(one) == 1 {
				parts[i] = one[0].V.(string)
			}
		}
		*out = append(*out, Field{path, strings.Join(parts, " ")})
	case reflect.String:
		*out = append(*out, Field{path, v.String()})
	case reflect.Bool:
		*out = append(*out, Field{path, strconv.FormatBool(v.Bool())})
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		*out = append(*out, Field{path, strconv.FormatInt(v.Int(), 10)})
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		*out = append(*out, Field{path, strconv.FormatUint(v.Uint(), 10)})
	case reflect.Float32, reflect.Float64:
		*out = append(*out, Field{path, strconv.FormatFloat(v.Float(), 'g', -1, 64)})
	}
}

// secretName: a field holding a secret, redacted even if Redacted does not
// know it yet.
func secretName(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "password") || strings.Contains(n, "secret") || strings.Contains(n, "token")
}

// OneLine joins a multi-line error (every problem of a config file) with
// "; ", for an error reply or a log attribute.
func OneLine(err error) string {
	return strings.Join(strings.Split(strings.TrimSpace(err.Error()), "\n"), "; ")
}
