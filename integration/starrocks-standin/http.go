package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// body is a Stream Load answer: the fields StarRocks sends, omitted when
// empty as StarRocks omits them per call.
type body map[string]any

func reply(w http.ResponseWriter, code int, b any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(b)
}

// drop closes the client's connection without an answer.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// authorized checks Basic auth as the FE and BE do.
func (s *server) authorized(w http.ResponseWriter, r *http.Request) bool {
	u, p, ok := r.BasicAuth()
	if ok && u == s.user && p == s.pass {
		return true
	}
	reply(w, http.StatusUnauthorized, body{"Status": "FAILED", "Message": "Access denied for user '" + u + "'"})
	return false
}

// feMux serves the FE: the transaction interface, get_load_state, the
// redirects of loads to the BE, and the admin endpoints.
func (s *server) feMux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("/api/transaction/begin", s.txnOp("begin", s.begin))
	m.HandleFunc("/api/transaction/prepare", s.txnOp("prepare", s.prepare))
	m.HandleFunc("/api/transaction/commit", s.txnOp("commit", s.commit))
	m.HandleFunc("/api/transaction/rollback", s.txnOp("rollback", s.rollback))
	m.HandleFunc("/api/transaction/load", s.redirect)
	m.HandleFunc("GET /api/{db}/get_load_state", s.getLoadState)
	m.HandleFunc("/api/{db}/{table}/_stream_load", s.redirect)
	m.HandleFunc("POST /admin/faults", s.adminFaults)
	m.HandleFunc("GET /admin/counts", s.adminCounts)
	m.HandleFunc("POST /admin/reset", s.adminReset)
	return m
}

// beMux serves the BE: the loads the FE redirected.
func (s *server) beMux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("/api/transaction/load", s.load)
	m.HandleFunc("/api/{db}/{table}/_stream_load", s.streamLoad)
	return m
}

// redirect sends a load to the BE with 307, after checking the caller, as
// the FE does; the client must re-send its credentials and body there.
func (s *server) redirect(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	if r.Method != http.MethodPut {
		reply(w, http.StatusMethodNotAllowed, body{"Status": "FAILED", "Message": "load needs PUT"})
		return
	}
	http.Redirect(w, r, s.beURL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
}

// txnOp wraps one transaction-interface operation: method, auth, the
// label and db headers, the call count and the armed fault.
func (s *server) txnOp(op string, fn func(ctx context.Context, r *http.Request, label, db, fault string) body) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost && r.Method != http.MethodPut {
			reply(w, http.StatusMethodNotAllowed, body{"Status": "FAILED", "Message": "transaction operations need POST"})
			return
		}
		if !s.authorized(w, r) {
			return
		}
		s.count(op)
		label, db := r.Header.Get("label"), r.Header.Get("db")
		if label == "" || db == "" {
			reply(w, http.StatusOK, body{"Status": "FAILED", "Message": "No label or db selected"})
			return
		}
		fault := s.faults.take(op)
		b := fn(r.Context(), r, label, db, fault)
		if fault == faultLostReply {
			drop(w)
			return
		}
		reply(w, http.StatusOK, b)
	}
}

func seconds(r *http.Request, header string, def time.Duration) time.Duration {
	if v := r.Header.Get(header); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return time.Duration(n) * time.Second
		}
	}
	return def
}

// existingStatus is what Label Already Exists reports for a label's
// transaction.
func existingStatus(x *txn) string {
	switch x.state {
	case stateCommitted, stateVisible:
		return "FINISHED"
	}
	return "RUNNING"
}

func (s *server) begin(ctx context.Context, r *http.Request, label, db, fault string) body {
	table := r.Header.Get("table")
	if table == "" {
		return body{"Status": "FAILED", "Message": "No table selected"}
	}
	cols, ok, err := s.tableColumns(ctx, db, table)
	if err != nil || !ok {
		return body{"Status": "FAILED", "Message": fmt.Sprintf("unknown table \"%s.%s\"", db, table)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if x := s.lookup(db, label); x != nil && x.state != stateAborted {
		st := existingStatus(x)
		// Reusing the label of a running transaction fails that one.
		s.abort(x, "label reused by a new begin")
		return body{"Status": "LABEL_ALREADY_EXISTS", "ExistingJobStatus": st,
			"Message": fmt.Sprintf("Label [%s] has already been used.", label)}
	}
	if fault == faultFail {
		return body{"Status": "FAILED", "Message": ""}
	}
	now := time.Now()
	x := &txn{label: label, db: db, table: table, state: statePrepare, cols: cols, begun: now, active: now,
		timeout: seconds(r, "timeout", 600*time.Second), idle: seconds(r, "idle_transaction_timeout", 0)}
	s.add(x)
	return body{"Status": "OK", "Message": "", "Label": label, "TxnId": x.id, "BeginTxnTimeMs": 0}
}

// stats is the counters part of a load, prepare or commit answer.
// A field the caller set (a load's own counts) is kept.
func stats(x *txn, b body) body {
	for k, v := range (body{"TxnId": x.id, "Label": x.label, "NumberTotalRows": x.loaded, "NumberLoadedRows": x.loaded,
		"NumberFilteredRows": 0, "NumberUnselectedRows": 0, "LoadBytes": x.bytes, "LoadTimeMs": 1,
		"StreamLoadPutTimeMs": 0, "ReceivedDataTimeMs": 0}) {
		if _, ok := b[k]; !ok {
			b[k] = v
		}
	}
	return b
}

// load is /api/transaction/load on the BE: the rows join the
// transaction, staged.
func (s *server) load(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	s.count("load")
	label, db := r.Header.Get("label"), r.Header.Get("db")
	fault := s.faults.take("load")
	if fault == faultDrop {
		s.dropMidBody(w, r, db, label)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		s.mu.Lock()
		if x := s.lookup(db, label); x != nil {
			s.abort(x, "load body read failed: "+err.Error())
		}
		s.mu.Unlock()
		return
	}
	f, ferr := formatOf(r.Header.Get)
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.lookup(db, label)
	switch {
	case x == nil:
		reply(w, http.StatusOK, body{"Label": label, "Status": "FAILED", "Message": "TXN_NOT_EXISTS"})
		return
	case x.state != statePrepare:
		reply(w, http.StatusOK, body{"TxnId": x.id, "Label": label, "Status": "FAILED", "Message": "Transcation State Invalid"})
		return
	case r.Header.Get("table") != "" && r.Header.Get("table") != x.table:
		reply(w, http.StatusOK, body{"TxnId": x.id, "Label": label, "Status": "FAILED", "Message": "table does not match the transaction's"})
		return
	case ferr != nil:
		s.abort(x, ferr.Error())
		reply(w, http.StatusOK, body{"TxnId": x.id, "Label": label, "Status": "FAILED", "Message": ferr.Error()})
		return
	case fault == faultFail:
		s.abort(x, "injected failure")
		reply(w, http.StatusOK, body{"TxnId": x.id, "Label": label, "Status": "FAILED", "Message": ""})
		return
	}
	p, err := parseBody(raw, f, x.cols)
	if err != nil || p.filtered > 0 {
		msg := "too many filtered rows"
		if err != nil {
			msg = err.Error()
		}
		s.abort(x, msg)
		reply(w, http.StatusOK, body{"TxnId": x.id, "Label": label, "Status": "FAILED", "Message": msg,
			"NumberTotalRows": p.total, "NumberLoadedRows": p.total - p.filtered, "NumberFilteredRows": p.filtered,
			"ErrorURL": s.beURL + "/api/_load_error_log?file=" + label, "FirstErrorMsg": p.firstErr})
		return
	}
	x.rows = append(x.rows, p.rows...)
	x.loaded += int64(len(p.rows))
	x.bytes += int64(len(raw))
	x.active = time.Now()
	x.loads++
	reply(w, http.StatusOK, stats(x, body{"Seq": x.loads - 1, "Status": "OK", "Message": "",
		"NumberTotalRows": p.total, "NumberLoadedRows": int64(len(p.rows)), "LoadBytes": len(raw)}))
}

// dropMidBody reads some of a load's body and closes the connection; the
// transaction is aborted, as a BE aborts a load whose client went away.
func (s *server) dropMidBody(w http.ResponseWriter, r *http.Request, db, label string) {
	buf := make([]byte, 16)
	_, _ = io.ReadFull(r.Body, buf)
	s.mu.Lock()
	if x := s.lookup(db, label); x != nil {
		s.abort(x, "connection closed during load")
	}
	s.mu.Unlock()
	drop(w)
}

func (s *server) prepare(ctx context.Context, r *http.Request, label, db, fault string) body {
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.lookup(db, label)
	switch {
	case x == nil:
		return body{"Label": label, "Status": "FAILED", "Message": "Transcation Not Exist"}
	case x.state == statePrepared:
		return stats(x, body{"Status": "OK", "Message": ""})
	case x.state != statePrepare:
		return body{"TxnId": x.id, "Label": label, "Status": "FAILED", "Message": "Transcation State Invalid: " + x.state}
	case fault == faultFail:
		s.abort(x, "injected failure")
		return body{"TxnId": x.id, "Label": label, "Status": "FAILED", "Message": ""}
	}
	x.state, x.prepared = statePrepared, time.Now()
	x.prepTTL = seconds(r, "prepared_timeout", 86400*time.Second)
	return stats(x, body{"Status": "OK", "Message": "", "WriteDataTimeMs": 1, "CommitAndPublishTimeMs": 0})
}

func (s *server) commit(ctx context.Context, r *http.Request, label, db, fault string) body {
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.lookup(db, label)
	switch {
	case x == nil:
		return body{"Label": label, "Status": "FAILED", "Message": "Transcation Not Exist"}
	case x.state == stateCommitted || x.state == stateVisible:
		return body{"TxnId": x.id, "Label": label, "Status": "OK", "Message": "Transaction already commited"}
	case x.state == stateAborted:
		return body{"TxnId": x.id, "Label": label, "Status": "FAILED", "Message": "transaction is aborted: " + x.reason}
	case fault == faultFail:
		return body{"TxnId": x.id, "Label": label, "Status": "FAILED", "Message": ""}
	}
	x.state = stateCommitted
	if fault == faultPublishTimeout {
		s.publishLater(x)
		return body{"TxnId": x.id, "Label": label, "Status": "FAILED", "Message": "publish timeout", "CommitAndPublishTimeMs": 1}
	}
	if err := s.apply(ctx, x); err != nil {
		x.state, x.reason, x.rows = stateAborted, err.Error(), nil
		return body{"TxnId": x.id, "Label": label, "Status": "FAILED", "Message": err.Error()}
	}
	return stats(x, body{"Status": "OK", "Message": "", "WriteDataTimeMs": 1, "CommitAndPublishTimeMs": 1})
}

// publishLater makes a COMMITTED transaction VISIBLE after the publish
// delay: the version is durable, its publishing slow.
func (s *server) publishLater(x *txn) {
	go func() {
		time.Sleep(s.publishDelay)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.apply(context.Background(), x); err != nil {
			logf("publish %s: %v", x.label, err)
		}
	}()
}

func (s *server) rollback(ctx context.Context, r *http.Request, label, db, fault string) body {
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.lookup(db, label)
	switch {
	case x == nil:
		return body{"Label": label, "Status": "FAILED", "Message": "Transcation Not Exist"}
	case x.state == stateCommitted || x.state == stateVisible:
		return body{"TxnId": x.id, "Label": label, "Status": "FAILED", "Message": "transaction is " + x.state + ", cannot rollback"}
	case fault == faultFail:
		return body{"TxnId": x.id, "Label": label, "Status": "FAILED", "Message": ""}
	}
	s.abort(x, "rolled back by the client")
	return body{"TxnId": x.id, "Label": label, "Status": "OK", "Message": ""}
}

// streamLoad is a plain /api/{db}/{table}/_stream_load on the BE: one
// request, one transaction, committed at once.
func (s *server) streamLoad(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	s.count("stream_load")
	db, table := r.PathValue("db"), r.PathValue("table")
	label := r.Header.Get("label")
	if label == "" {
		label = fmt.Sprintf("standin_%d", time.Now().UnixNano())
	}
	fault := s.faults.take("stream_load")
	if fault == faultDrop {
		buf := make([]byte, 16)
		_, _ = io.ReadFull(r.Body, buf)
		drop(w)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	cols, ok, err := s.tableColumns(r.Context(), db, table)
	if err != nil || !ok {
		reply(w, http.StatusOK, body{"Label": label, "Status": "Fail", "Message": fmt.Sprintf("unknown table \"%s.%s\"", db, table)})
		return
	}
	f, ferr := formatOf(r.Header.Get)
	s.mu.Lock()
	defer s.mu.Unlock()
	if x := s.lookup(db, label); x != nil && x.state != stateAborted {
		reply(w, http.StatusOK, body{"Label": label, "Status": "Label Already Exists", "ExistingJobStatus": existingStatus(x),
			"Message": fmt.Sprintf("Label [%s] has already been used.", label)})
		return
	}
	now := time.Now()
	x := &txn{label: label, db: db, table: table, state: statePrepare, cols: cols, begun: now, active: now}
	s.add(x)
	fail := func(msg string, extra body) {
		s.abort(x, msg)
		b := body{"TxnId": x.id, "Label": label, "Status": "Fail", "Message": msg}
		for k, v := range extra {
			b[k] = v
		}
		reply(w, http.StatusOK, b)
	}
	if ferr != nil {
		fail(ferr.Error(), nil)
		return
	}
	if fault == faultFail {
		fail("injected failure", nil)
		return
	}
	p, err := parseBody(raw, f, cols)
	if err != nil || p.filtered > 0 {
		msg := "too many filtered rows"
		if err != nil {
			msg = err.Error()
		}
		fail(msg, body{"NumberTotalRows": p.total, "NumberFilteredRows": p.filtered, "FirstErrorMsg": p.firstErr,
			"ErrorURL": s.beURL + "/api/_load_error_log?file=" + label})
		return
	}
	x.rows, x.loaded, x.bytes, x.state = p.rows, int64(len(p.rows)), int64(len(raw)), stateCommitted
	status := "Success"
	if fault == faultPublishTimeout {
		status = "Publish Timeout"
		s.publishLater(x)
	} else if err := s.apply(r.Context(), x); err != nil {
		x.state, x.reason = stateAborted, err.Error()
		reply(w, http.StatusOK, body{"TxnId": x.id, "Label": label, "Status": "Fail", "Message": err.Error()})
		return
	}
	if fault == faultLostReply {
		drop(w)
		return
	}
	reply(w, http.StatusOK, stats(x, body{"Status": status, "Message": "OK", "BeginTxnTimeMs": 0, "WriteDataTimeMs": 1,
		"CommitAndPublishTimeMs": 1}))
}

// getLoadState answers GET /api/{db}/get_load_state?label= with the
// RestBaseResult fields and the label's transaction state.
func (s *server) getLoadState(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	s.count("get_load_state")
	db, label := r.PathValue("db"), r.URL.Query().Get("label")
	switch fault := s.faults.take("get_load_state"); fault {
	case faultLostReply, faultDrop:
		drop(w)
		return
	case faultFail:
		reply(w, http.StatusInternalServerError, body{"status": "FAILED", "code": "1", "msg": "injected failure", "message": "injected failure"})
		return
	}
	if label == "" {
		reply(w, http.StatusOK, body{"status": "FAILED", "code": "1", "msg": "No label selected.", "message": "No label selected."})
		return
	}
	if !s.dbExists(r.Context(), db) {
		msg := "unknown database, database=" + db
		reply(w, http.StatusOK, body{"status": "FAILED", "code": "1", "msg": msg, "message": msg})
		return
	}
	s.mu.Lock()
	state, reason := stateUnknown, ""
	if x := s.lookup(db, label); x != nil {
		state, reason = x.state, x.reason
	}
	s.mu.Unlock()
	reply(w, http.StatusOK, body{"status": "OK", "code": "0", "msg": "Success", "message": "OK", "state": state, "reason": reason})
}

func (s *server) adminFaults(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Op string `json:"op"`
		fault
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := s.faults.set(req.Op, req.fault); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) adminCounts(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	states := map[string]string{}
	for db, m := range s.labels {
		for l, x := range m {
			states[db+"/"+l] = x.state
		}
	}
	reply(w, http.StatusOK, map[string]any{"counts": s.counts, "labels": states, "queries": s.queries})
}

func (s *server) adminReset(w http.ResponseWriter, r *http.Request) {
	s.faults.clear()
	s.mu.Lock()
	s.counts = map[string]int{}
	s.queries = nil
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
