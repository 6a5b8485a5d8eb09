package review

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/commandline"
)

// Options say how a review commits.
type Options struct {
	// Validate is a validator the commit adds after the project's
	// validate (recorded at open), which always runs: the page can raise
	// the gate, never lower it.
	Validate string
	// Log receives a line per action, for the terminal that started the
	// review.
	Log io.Writer
}

// Outcome is how a review ended.
type Outcome struct {
	// Result is the last settle attempt's result (nil when none was made).
	Result *airlock.Result
	// Err is that attempt's error: a *airlock.Refusal for a refused commit.
	Err error
	// Settled says the transaction was committed or discarded.
	Settled bool
}

// Server is one transaction's review page.
type Server struct {
	tx     *airlock.Tx
	o      Options
	token  string
	ln     net.Listener
	host   string // 127.0.0.1:PORT, the only Host served
	origin string // http://127.0.0.1:PORT, the only Origin a POST may have
	srv    *http.Server

	mu      sync.Mutex // serialises actions
	outcome Outcome
	done    chan struct{} // closed once settled

	// shown is, for each digest a page carried, the files that page
	// listed: a commit from the page may check only those, whatever the
	// form says it showed.
	shownMu sync.Mutex
	shown   map[string][]string
}

// New listens on a random port of 127.0.0.1 for a review of tx.
func New(tx *airlock.Tx, o Options) (*Server, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("review token: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("review server: listen on 127.0.0.1: %w", err)
	}
	s := &Server{tx: tx, o: o, token: hex.EncodeToString(b[:]), ln: ln, done: make(chan struct{})}
	s.host = ln.Addr().String()
	s.origin = "http://" + s.host
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	return s, nil
}

// URL is the page's address, token included.
func (s *Server) URL() string { return s.origin + "/" + s.token + "/" }

// Serve serves the page until the transaction is settled from it, ctx is
// done, or the listener fails. The response that reports a settle is
// delivered before Serve returns.
func (s *Server) Serve(ctx context.Context) (Outcome, error) {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	var err error
	select {
	case <-s.done:
	case <-ctx.Done():
	case err = <-errc:
	}
	// Shutdown lets the response that reported a settle finish; a
	// browser's speculative connections, which never carry a request,
	// would hold it for seconds, so they are closed after a moment.
	shut, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if s.srv.Shutdown(shut) != nil {
		s.srv.Close()
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outcome, err
}

// ServeHTTP checks every request before it reaches the page: the Host
// must be the listener's (no DNS rebinding), the path must start with the
// token, and a POST must come from the page's own origin.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with the page's own form posts, which the Origin
	// check must refuse. No link leaves the page, so the token never
	// travels in a Referer to another site either way.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if r.Host != s.host {
		forbid(w, "this page is served for "+s.host+" only")
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/")
	tok, action, _ := strings.Cut(rest, "/")
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) != 1 {
		forbid(w, "the review token is missing or wrong; open the URL airlock review printed")
		return
	}
	switch {
	case r.Method == http.MethodGet && action == "":
		s.page(w, r, nil)
	case r.Method == http.MethodPost && (action == "commit" || action == "approve" || action == "discard"):
		if origin := r.Header.Get("Origin"); origin != s.origin {
			forbid(w, "a review action must come from the review page itself (Origin "+s.origin+")")
			return
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
			forbid(w, "a review action must come from the review page itself")
			return
		}
		s.act(w, r, action)
	case action == "commit" || action == "approve" || action == "discard":
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "use the buttons on the review page", http.StatusMethodNotAllowed)
	default:
		http.NotFound(w, r)
	}
}

func forbid(w http.ResponseWriter, why string) {
	http.Error(w, "403 forbidden: "+why, http.StatusForbidden)
}

// act settles the transaction as the button said, and answers with the
// page showing the outcome.
func (s *Server) act(w http.ResponseWriter, r *http.Request, action string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.outcome.Settled {
		s.page(w, r, &s.outcome)
		return
	}
	ctx := context.WithoutCancel(r.Context())
	var res *airlock.Result
	var err error
	// A commit is bound to the change set the page showed: the page
	// carries its digest, and the commit refuses (ReviewStale) unless the
	// change set it freezes is still that one.
	reviewed := r.PostFormValue("diff_digest")
	var paths []string
	var perr error
	if action != "discard" && reviewed != "" {
		var bad *badPick
		if paths, perr = picked(r, s.shownFor(reviewed)); errors.As(perr, &bad) {
			// A form the page cannot have sent: nothing is attempted and
			// nothing recorded.
			http.Error(w, "400 bad request: "+bad.Error(), http.StatusBadRequest)
			return
		}
	}
	switch {
	case action == "discard":
		res, err = s.tx.Discard(ctx, airlock.DiscardOptions{})
	case reviewed == "":
		err = errors.New("this commit does not say which change set it approves (the page's diff_digest is missing); reload the review page, review the change set and commit from the page")
	case perr != nil:
		err = perr
	default:
		// The checked files of the change set reviewed: a part of that
		// very change set (its digest binds the whole), or all of it.
		res, err = s.tx.Commit(ctx, airlock.CommitOptions{Approve: action == "approve", Validate: s.o.Validate, ExpectDiffDigest: reviewed, Paths: paths})
	}
	s.outcome = Outcome{Result: res, Err: err}
	if res != nil && res.PartOf == "" && (res.Outcome == airlock.Committed || res.Outcome == airlock.Discarded || res.Outcome == airlock.NoChanges) {
		s.outcome.Settled = true
	}
	switch {
	case s.outcome.Settled:
		fmt.Fprintf(s.o.Log, "airlock: %s from the review page: %s\n", action, res.Outcome)
	case err != nil:
		fmt.Fprintf(s.o.Log, "airlock: %s from the review page: %s\n", action, commandline.Message(err))
	}
	s.page(w, r, &s.outcome)
	if s.outcome.Settled {
		// The page above is written; Serve shuts down once it is sent.
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		close(s.done)
	}
}

// badPick is a commit form naming a file the page did not show.
type badPick struct{ why string }

func (e *badPick) Error() string { return e.why }

// shownFor is the files the page bound to digest listed; nil when no
// page carried digest.
func (s *Server) shownFor(digest string) []string {
	s.shownMu.Lock()
	defer s.shownMu.Unlock()
	return s.shown[digest]
}

// remember records the files a page bound to digest lists.
func (s *Server) remember(digest string, files []*file) {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	s.shownMu.Lock()
	defer s.shownMu.Unlock()
	if s.shown == nil {
		s.shown = map[string][]string{}
	}
	s.shown[digest] = paths
}

// picked is the files a commit from the page takes: nil for all of those
// the page bound to the form's digest showed (a plain commit; also a page
// without checkboxes), else a selector for each file checked. Only the
// server's record of what the page showed counts: a checked path that is
// not exactly one of its files, or a digest no page carried, is a
// *badPick.
func picked(r *http.Request, shown []string) ([]string, error) {
	if r.PostFormValue("select") == "" {
		return nil, nil
	}
	if shown == nil {
		return nil, &badPick{fmt.Sprintf("diff_digest %q is not the digest of a change set this review page showed; reload the page and commit from it", r.PostFormValue("diff_digest"))}
	}
	var checked []string
	for _, p := range r.PostForm["path"] {
		if !slices.Contains(shown, p) {
			return nil, &badPick{fmt.Sprintf("path %q is not a file the review page showed (it showed %s); reload the page and check its files", p, strings.Join(shown, ", "))}
		}
		if !slices.Contains(checked, p) {
			checked = append(checked, p)
		}
	}
	if len(checked) == 0 {
		return nil, errors.New("no file was checked: check the files to commit, or Discard")
	}
	if len(checked) == len(shown) {
		return nil, nil
	}
	out := make([]string, len(checked))
	for i, p := range checked {
		out[i] = airlock.PathSelector(p)
	}
	return out, nil
}

// page renders the review page, with the outcome of an action if any.
func (s *Server) page(w http.ResponseWriter, r *http.Request, out *Outcome) {
	v, err := s.view(r, out)
	if err != nil {
		http.Error(w, "airlock: "+err.Error(), http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := pageTmpl().Execute(&buf, v); err != nil {
		http.Error(w, "airlock: render the review page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

// pageView is what the template shows.
type pageView struct {
	Info  *airlock.Info
	Split bool
	Base  string // the URL path of the page, token included
	Files []*file
	Notes []string
	// Protected are the changed paths a commit would hold for approval,
	// each once: the only list of them on the page.
	Protected []string
	Outcome   *Outcome
	Refusal   *airlock.Refusal // the outcome's refusal
	// RefusalText is its reason with the remedy in the page's terms.
	RefusalText string
	ErrText     string // the outcome's error, when not a refusal
	// Last is the transaction's recorded refusal, shown when no action
	// was taken and nothing blocks a commit now; LastText is its reason
	// in the page's terms.
	Last     *airlock.Refusal
	LastText string
	Open     bool // the transaction can still be settled
	// Empty says the change set is empty: there is nothing to commit.
	Empty bool
	// CanCommit and CanApprove say a plain commit, and one approving the
	// protected paths, would land now (Tx.CheckReview): the page offers
	// only what would.
	CanCommit, CanApprove bool
	// Blocked is the refusal any commit would meet now, when neither
	// would land; BlockedText is its reason in the page's terms.
	Blocked     *airlock.Refusal
	BlockedText string
	Truncated   bool
	// Digest is the digest of the change set the page shows (the frozen
	// snapshot its patch was read from), which a Commit or Approve sends
	// back; Changing says a staged file changed while it was frozen, so
	// the page shows no diff and offers no commit.
	Digest   string
	Changing bool
	// Selectable says each file has a checkbox: a commit lands the
	// checked ones (a partial commit, bound to Digest like any).
	Selectable bool
	// Landed is the part the last action committed (a partial commit):
	// the transaction stays open with the rest, which the page shows.
	Landed *airlock.Result
}

func (s *Server) view(r *http.Request, out *Outcome) (*pageView, error) {
	ctx := r.Context()
	info, err := s.tx.Info(ctx)
	if err != nil {
		return nil, err
	}
	v := &pageView{Info: info, Split: r.URL.Query().Get("view") == "split", Base: "/" + s.token + "/", Outcome: out}
	v.Open = info.Status == airlock.StatusOpen || info.Status == airlock.StatusRefused
	if out != nil && out.Result != nil && out.Result.PartOf != "" {
		v.Landed = out.Result
	}
	if out != nil && out.Err != nil {
		if !errors.As(out.Err, &v.Refusal) {
			v.ErrText = commandline.Message(out.Err)
		} else {
			v.RefusalText = explain(v.Refusal)
		}
	}
	if info.Status == airlock.StatusDiscarded || info.Status == airlock.StatusNoChanges {
		return v, nil
	}
	// An open transaction's page shows one frozen snapshot of its change
	// set and carries that snapshot's digest: the patch is read from the
	// very bytes the digest covers, never from the staged tree again, so
	// an agent rewriting a staged file while the page is made cannot show
	// one content and have the other approved. A staged file that moves
	// under the snapshot leaves the page with no diff and no commit, only
	// the advice to reload.
	var patch bytes.Buffer
	var notes []string
	if v.Open {
		v.Digest, notes, err = s.tx.ReviewDiff(ctx, &patch, airlock.DiffPatch)
		var r *airlock.Refusal
		if errors.As(err, &r) && r.Kind == airlock.StagedChanged {
			v.Changing = true
			return v, nil
		}
	} else {
		notes, err = s.tx.Diff(ctx, &patch, airlock.DiffPatch)
	}
	if err != nil {
		return nil, err
	}
	v.Notes = notes
	if v.Files, err = parsePatch(&patch); err != nil {
		return nil, err
	}
	if v.Digest != "" {
		s.remember(v.Digest, v.Files)
	}
	if v.Open {
		if err := s.verdict(ctx, v); err != nil {
			return nil, err
		}
	}
	for _, f := range v.Files {
		if v.Open {
			f.Protected = slices.Contains(v.Protected, f.Path)
		} else if f.Protected, err = s.tx.Protects(f.Path, false); err != nil {
			return nil, err
		}
		v.Truncated = v.Truncated || f.Truncated
	}
	return v, nil
}

// verdict asks the core which commit of the change set the page shows
// would land now, as the commit's own preflight decides (validation
// included), and sets the buttons and banners v offers by it. A refusal
// is never read from its words: only its kind and paths are looked at.
func (s *Server) verdict(ctx context.Context, v *pageView) error {
	vd, err := s.tx.CheckReview(ctx, airlock.CommitOptions{Validate: s.o.Validate, ExpectDiffDigest: v.Digest})
	if err != nil {
		return err
	}
	v.Empty, v.Protected = vd.Empty, vd.Protected
	if vd.Empty {
		return nil
	}
	v.CanCommit = vd.Plain == nil
	v.CanApprove = len(vd.Protected) > 0 && vd.Approved == nil
	v.Selectable = v.CanCommit || v.CanApprove
	if !v.CanCommit && !v.CanApprove {
		// Approved is Plain but for the protection an approval lifts: it
		// is what stands in the way of any commit.
		v.Blocked = vd.Approved
		v.BlockedText = explain(vd.Approved)
		if v.Refusal != nil && v.Refusal.Kind == v.Blocked.Kind {
			// The action just refused says it already.
			v.Blocked = nil
		}
	}
	if v.Refusal == nil && v.Blocked == nil && v.Info.Status == airlock.StatusRefused {
		if last, err := s.tx.LastRefusal(); err == nil && last != nil {
			v.Last, v.LastText = last, explain(last)
		}
	}
	return nil
}
