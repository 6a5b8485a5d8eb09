package review

import (
	"html/template"

	"github.com/airlockdev/airlock"
	"strconv"
	"sync"
)

// pageTmpl is parsed when a review page is first served, not when the
// program starts: most starts of airlock serve none.
var pageTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Funcs(template.FuncMap{
		"rows": sideBySide,
		"num": func(n int) string {
			if n == 0 {
				return ""
			}
			return strconv.Itoa(n)
		},
		"cls": func(k byte) string {
			switch k {
			case '+':
				return "add"
			case '-':
				return "del"
			case '\\':
				return "meta"
			case 0:
				return "none"
			}
			return "ctx"
		},
		"sign": func(k byte) string {
			switch k {
			case '+', '-':
				return string(k)
			}
			return ""
		},
		"inc": func(i int) int { return i + 1 },
		// paths are the paths a refusal banner lists: none for
		// protected paths, which the page lists once, on their own.
		"paths": func(r *airlock.Refusal) []string {
			if r.Kind == airlock.ProtectedPathNotApproved {
				return nil
			}
			return r.Paths
		},
	}).Parse(pageHTML))
})

const pageHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>airlock review · {{.Info.ID}}</title>
<style>
:root { --fg:#1f2328; --muted:#59636e; --line:#d1d9e0; --bg:#ffffff; --soft:#f6f8fa;
  --add:#dafbe1; --addnum:#aceebb; --del:#ffebe9; --delnum:#ffcecb; --hunk:#ddf4ff;
  --ok:#1a7f37; --bad:#cf222e; --warn:#9a6700; --warnbg:#fff8c5; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.5 -apple-system, BlinkMacSystemFont, "Segoe UI", Helvetica, Arial, sans-serif; color:var(--fg); background:var(--soft); }
header { background:var(--bg); border-bottom:1px solid var(--line); padding:16px 24px; }
h1 { font-size:20px; margin:0 0 4px; font-weight:600; }
h1 code { font-size:18px; }
.meta { color:var(--muted); display:flex; flex-wrap:wrap; gap:4px 20px; }
.meta b { color:var(--fg); font-weight:500; }
main { padding:16px 24px 48px; max-width:1600px; }
.badge { display:inline-block; padding:0 8px; border-radius:12px; font-size:12px; font-weight:600; line-height:20px; border:1px solid transparent; vertical-align:middle; }
.st-open { background:#ddf4ff; color:#0969da; } .st-refused { background:var(--del); color:var(--bad); }
.st-committed { background:var(--add); color:var(--ok); } .st-discarded, .st-no_changes { background:#eaeef2; color:var(--muted); }
.st-interrupted { background:var(--warnbg); color:var(--warn); }
.banner { border:1px solid var(--line); border-radius:6px; padding:12px 16px; margin:0 0 16px; background:var(--bg); }
.banner h2 { margin:0 0 4px; font-size:16px; }
.banner.ok { border-color:#4ac26b; background:#f0fff4; } .banner.bad { border-color:#ff8182; background:#fff5f5; }
.banner.warn { border-color:#d4a72c; background:var(--warnbg); }
.banner p { margin:4px 0; } .banner ul { margin:4px 0; padding-left:20px; }
.actions { display:flex; flex-wrap:wrap; align-items:center; gap:8px; margin:0 0 16px; }
.actions form { margin:0; }
button { font:inherit; font-weight:600; padding:5px 16px; border-radius:6px; border:1px solid rgba(31,35,40,.15); cursor:pointer; background:var(--soft); color:var(--fg); }
button.primary { background:#1f883d; color:#fff; } button.approve { background:#9a6700; color:#fff; }
button.danger { color:var(--bad); }
.spacer { flex:1; }
.toggle a { padding:5px 12px; border:1px solid var(--line); text-decoration:none; color:var(--fg); background:var(--bg); }
.toggle a:first-child { border-radius:6px 0 0 6px; } .toggle a:last-child { border-radius:0 6px 6px 0; border-left:0; }
.toggle a.on { background:#0969da; color:#fff; border-color:#0969da; }
table.files { border-collapse:collapse; width:100%; background:var(--bg); border:1px solid var(--line); border-radius:6px; margin:0 0 16px; }
table.files td { padding:4px 12px; border-top:1px solid var(--line); white-space:nowrap; }
table.files td.p { width:100%; }
table.files tr:first-child td { border-top:0; }
table.files a { color:#0969da; text-decoration:none; font-family:ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.n-add { color:var(--ok); font-weight:600; } .n-del { color:var(--bad); font-weight:600; }
.file { background:var(--bg); border:1px solid var(--line); border-radius:6px; margin:0 0 16px; overflow:hidden; }
.file > .head { display:flex; gap:12px; align-items:center; padding:8px 12px; background:var(--soft); border-bottom:1px solid var(--line); }
.file > .head .path { font-family:ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-weight:600; }
.file > .note { padding:12px; color:var(--muted); }
table.diff { border-collapse:collapse; width:100%; table-layout:fixed; font:12px/20px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
table.diff td { padding:0 8px; vertical-align:top; white-space:pre-wrap; word-break:break-all; }
col.c-num { width:56px; } col.c-sign { width:22px; }
table.diff td.num { text-align:right; color:var(--muted); user-select:none; white-space:nowrap; }
table.diff td.sign { user-select:none; padding:0 4px; }
table.diff tr.hunk td { background:var(--hunk); color:var(--muted); padding:2px 8px; }
td.add { background:var(--add); } td.num.add { background:var(--addnum); }
td.del { background:var(--del); } td.num.del { background:var(--delnum); }
td.none { background:var(--soft); } td.meta { color:var(--muted); font-style:italic; }
.split td.num.right { border-left:1px solid var(--line); }
footer { color:var(--muted); font-size:12px; margin-top:24px; }
</style>
</head>
<body>
<header>
<h1>Review transaction <code>{{.Info.ID}}</code> <span class="badge st-{{.Info.Status}}">{{.Info.Status}}</span></h1>
<div class="meta">
<span>base <b><code>{{.Info.Base}}</code></b></span>
<span>backend <b>{{.Info.Backend}}</b></span>
<span>opened <b>{{.Info.CreatedAt.Format "2006-01-02 15:04:05 MST"}}</b></span>
{{with .Digest}}<span>change set <b><code id="digest">{{.}}</code></b></span>{{end}}
<span><span class="n-add">{{.Info.Added}} added</span> · <b>{{.Info.Modified}} modified</b> · <span class="n-del">{{.Info.Deleted}} deleted</span></span>
</div>
</header>
<main>
{{with .Outcome}}{{if .Settled}}
<div class="banner ok" id="outcome"><h2>{{if eq (print .Result.Outcome) "committed"}}Committed to the base{{else if eq (print .Result.Outcome) "discarded"}}Discarded{{else}}Nothing to commit: no changes{{end}}</h2>
<p>{{.Result.Added}} added, {{.Result.Modified}} modified, {{.Result.Deleted}} deleted. Receipt: <code>{{.Result.ReceiptPath}}</code></p>
<p>This review is over and its server has stopped. You can close this tab.</p></div>
{{end}}{{end}}
{{with .Refusal}}
<div class="banner bad" id="outcome"><h2>Commit refused: {{.Kind}}</h2><p>{{$.RefusalText}}</p>
{{with paths .}}<ul>{{range .}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
<p>The base was not touched; the transaction is kept.</p></div>
{{end}}
{{with .Blocked}}
<div class="banner bad" id="blocked"><h2>A commit now would be refused: {{.Kind}}</h2><p>{{$.BlockedText}}</p>
{{with paths .}}<ul>{{range .}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
<p>So the page offers no commit; the transaction is kept.</p></div>
{{end}}
{{with .Last}}
<div class="banner bad" id="last"><h2>Last commit refused: {{.Kind}}</h2><p>{{$.LastText}}</p>
{{with paths .}}<ul>{{range .}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}</div>
{{end}}
{{with .Landed}}
<div class="banner ok" id="landed"><h2>Committed part of the transaction as {{.TxID}}</h2><p>{{.Added}} added, {{.Modified}} modified, {{.Deleted}} deleted. Receipt: <code>{{.ReceiptPath}}</code></p>
<ul>{{range .Receipt.Paths}}<li><code>{{.}}</code></li>{{end}}</ul>
<p>The rest stays open below: commit it, or discard it (the part that landed stays in the base; <code>airlock undo {{.TxID}}</code> reverts it).</p></div>
{{end}}
{{with .ErrText}}<div class="banner bad" id="outcome"><h2>airlock failed</h2><p>{{.}}</p></div>{{end}}
{{if .Changing}}<div class="banner warn" id="changing"><h2>The change set is changing</h2><p>The agent changed the staged workspace while this page was being prepared. <a href="{{.Base}}">Reload</a> to review what it holds now.</p></div>{{end}}
{{if and .Open .Protected}}
<div class="banner warn" id="protected"><h2>Protected paths changed</h2><p>A plain commit is refused{{if .CanApprove}}; <b>Approve &amp; commit</b> applies them with the rest{{end}}.</p>
<ul>{{range .Protected}}<li><code>{{.}}</code></li>{{end}}</ul></div>
{{end}}
<div class="actions">
{{if .Open}}
{{if and .Digest .Selectable}}
<form method="post" action="{{.Base}}commit" id="settle"><input type="hidden" name="diff_digest" value="{{.Digest}}"><input type="hidden" name="select" value="1">
{{if .CanCommit}}<button class="primary" type="submit" id="commit" title="commit the checked files">Commit</button>{{end}}
{{if .CanApprove}}<button class="approve" type="submit" id="approve" formaction="{{.Base}}approve">Approve &amp; commit</button>{{end}}
</form>
{{end}}
<form method="post" action="{{.Base}}discard"><button class="danger" type="submit" id="discard">Discard</button></form>
{{end}}
<span class="spacer"></span>
{{if not (and .Outcome .Outcome.Settled)}}<span class="toggle"><a href="{{.Base}}" {{if not .Split}}class="on"{{end}}>Unified</a><a href="{{.Base}}?view=split" {{if .Split}}class="on"{{end}}>Side by side</a></span>{{end}}
</div>
{{if .Files}}
<table class="files">
{{range $i, $f := .Files}}<tr>{{if $.Selectable}}<td><input type="checkbox" form="settle" name="path" value="{{.Path}}" id="pick{{$i}}" checked></td>{{end}}<td><span class="badge st-{{if eq .Status "added"}}committed{{else if eq .Status "deleted"}}refused{{else}}open{{end}}">{{.Status}}</span>{{if .Protected}} <span class="badge st-interrupted">protected</span>{{end}}</td>
<td class="p"><a href="#f{{$i}}">{{.Path}}</a></td><td style="text-align:right"><span class="n-add">+{{.Added}}</span> <span class="n-del">−{{.Deleted}}</span></td></tr>
{{end}}</table>
{{range $i, $f := .Files}}
<div class="file" id="f{{$i}}">
<div class="head"><span class="path">{{.Path}}</span><span class="badge st-{{if eq .Status "added"}}committed{{else if eq .Status "deleted"}}refused{{else}}open{{end}}">{{.Status}}</span>
{{if .Protected}}<span class="badge st-interrupted">protected</span>{{end}}
{{if and .OldMode .NewMode}}<span class="meta">mode {{.OldMode}} → {{.NewMode}}</span>{{end}}</div>
{{if .Binary}}<div class="note">Binary file {{.Status}}; not shown.</div>
{{else if not .Hunks}}<div class="note">{{if eq .Status "mode"}}Only the mode changed.{{else}}Empty file.{{end}}</div>
{{else if $.Split}}
<table class="diff split"><colgroup><col class="c-num"><col><col class="c-num"><col></colgroup>
{{range .Hunks}}<tr class="hunk"><td colspan="4">{{.Header}}</td></tr>
{{range rows .}}<tr><td class="num {{cls .Left.Kind}}">{{num .Left.Old}}</td><td class="code {{cls .Left.Kind}}">{{.Left.Text}}</td><td class="num right {{cls .Right.Kind}}">{{num .Right.New}}</td><td class="code {{cls .Right.Kind}}">{{.Right.Text}}</td></tr>
{{end}}{{end}}</table>
{{else}}
<table class="diff"><colgroup><col class="c-num"><col class="c-num"><col class="c-sign"><col></colgroup>
{{range .Hunks}}<tr class="hunk"><td colspan="4">{{.Header}}</td></tr>
{{range .Lines}}<tr><td class="num {{cls .Kind}}">{{num .Old}}</td><td class="num {{cls .Kind}}">{{num .New}}</td><td class="sign {{cls .Kind}}">{{sign .Kind}}</td><td class="{{cls .Kind}}">{{.Text}}</td></tr>
{{end}}{{end}}</table>
{{end}}
{{if .Truncated}}<div class="note">Some lines were left out to keep this page readable; <code>airlock diff {{$.Info.ID}}</code> shows them all.</div>{{end}}
</div>
{{end}}
{{else if .Empty}}<div class="banner" id="empty"><p>No changes: there is nothing to commit. <b>Discard</b> closes the transaction.</p></div>
{{else if not .Changing}}<div class="banner"><p>No changes to show.</p></div>{{end}}
{{with .Notes}}<div class="banner"><h2>Not shown in the diff</h2><ul>{{range .}}<li>{{.}}</li>{{end}}</ul></div>{{end}}
<footer>Served by <code>airlock review</code> on 127.0.0.1 for this transaction only. Not covered by a transaction: the network, databases, other processes and files outside the base.</footer>
</main>
</body>
</html>
`
