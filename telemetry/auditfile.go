package telemetry

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// AuditFile appends each lock event as one JSON line, rotating by size: when
// a line would take the file past max bytes, FILE becomes FILE.1, FILE.1
// becomes FILE.2 and so on; the oldest beyond keep is deleted.
type AuditFile struct {
	mu      sync.Mutex
	path    string
	max     int64
	keep    int
	f       *os.File
	size    int64
	failing bool // the last write failed (logged once until one succeeds)
	closed  bool
}

// auditLine is the JSON form of an Event. Tokens are masked already; values
// never reach an event.
type auditLine struct {
	Time    string `json:"time"`
	Outcome string `json:"outcome"`
	Command string `json:"command,omitempty"`
	Key     string `json:"key,omitempty"`
	Rule    string `json:"rule,omitempty"`
	Client  string `json:"client,omitempty"`
	Name    string `json:"client_name,omitempty"`
	Owner   string `json:"owner,omitempty"`
	Holder  string `json:"holder,omitempty"`
	Token   string `json:"token,omitempty"`
	Grant   int64  `json:"grant,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

func OpenAudit(path string, max int64, keep int) (*AuditFile, error) {
	if max <= 0 {
		max = 64 << 20
	}
	if keep <= 0 {
		keep = 5
	}
	a := &AuditFile{path: path, max: max, keep: keep}
	if err := a.open(); err != nil {
		return nil, fmt.Errorf("audit file: %w", err)
	}
	return a, nil
}

func (a *AuditFile) open() error {
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	a.f, a.size = f, st.Size()
	return nil
}

func (a *AuditFile) Write(e Event, log *slog.Logger) {
	line, err := json.Marshal(auditLine{
		Time: e.Time.UTC().Format(time.RFC3339Nano), Outcome: string(e.Outcome), Command: e.Command,
		Key: e.Key, Rule: e.Rule, Client: e.Client, Name: e.Name, Owner: e.Owner, Holder: e.Holder,
		Token: e.Token, Grant: e.Grant, Detail: e.Detail,
	})
	if err != nil {
		return
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	if a.f != nil && a.size > 0 && a.size+int64(len(line)) > a.max {
		err = a.rotate()
	}
	if err == nil && a.f == nil {
		err = a.open()
	}
	if err == nil {
		var n int
		n, err = a.f.Write(line)
		a.size += int64(n)
	}
	if err != nil {
		if !a.failing {
			log.Error("cannot write the audit file; events stay in the log and the audit ring", "file", a.path, "err", err)
		}
		a.failing = true
		return
	}
	a.failing = false
}

func (a *AuditFile) rotate() error {
	a.f.Close()
	a.f = nil
	_ = os.Remove(fmt.Sprintf("%s.%d", a.path, a.keep))
	for i := a.keep - 1; i >= 1; i-- {
		_ = os.Rename(fmt.Sprintf("%s.%d", a.path, i), fmt.Sprintf("%s.%d", a.path, i+1))
	}
	if err := os.Rename(a.path, a.path+".1"); err != nil && !os.IsNotExist(err) {
		return err
	}
	return a.open()
}

func (a *AuditFile) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	if a.f != nil {
		a.f.Close()
		a.f = nil
	}
}
