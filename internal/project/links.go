package project

import (
	"path"
	"strings"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/manifest"
)

// LinkAliases finds the protected paths a change set reaches through
// symlinks: after the commit, a path beneath a symlink P that resolves to a
// directory T inside the base shows T's content, so a change at T/x is also
// a change at P/x. For every symlink in the result tree (the base at open,
// as the change set leaves it), each changed path beneath its target, and
// for a symlink the change set adds or retargets each path beneath its
// target at all, is tested as the alias P/x against match. It returns the
// change set's paths to refuse: the changed path (or the new link) whose
// alias is protected. Targets outside the base are the boundary check's.
func LinkAliases(set *changeset.Set, baseDir string, baseLinks map[string]string, loadBase func() (*manifest.Manifest, error), match func(rel string, isDir bool) bool) ([]string, error) {
	links := map[string]string{} // link path -> target, in the result tree
	for p, t := range baseLinks {
		links[p] = t
	}
	changed := map[string]changeset.Change{}
	for _, c := range set.Changes {
		changed[c.Path] = c
		delete(links, c.Path)
		if c.Result.Kind == manifest.KindSymlink {
			links[c.Path] = c.Result.Target
		}
	}
	if len(links) == 0 {
		return nil, nil
	}
	hit := map[string]bool{}
	var out []string
	add := func(p string) {
		if !hit[p] {
			hit[p] = true
			out = append(out, p)
		}
	}
	// The result tree's paths are needed only beneath a link the change
	// set adds or retargets (rare); beneath every other link, only the
	// changed paths can be new content (a tree's links are many: a
	// node_modules/.bin holds hundreds).
	var result []manifest.Entry
	resultTree := func() ([]manifest.Entry, error) {
		if result != nil {
			return result, nil
		}
		result = []manifest.Entry{}
		base, err := loadBase()
		if err != nil {
			return nil, err
		}
		if base != nil {
			for _, e := range base.Entries {
				if c, ok := changed[e.Path]; ok && c.Result.Kind == manifest.KindNone {
					continue
				}
				result = append(result, e)
			}
		}
		for _, c := range set.Changes {
			if c.Base.Kind == manifest.KindNone && c.Result.Kind != manifest.KindNone {
				e := c.Result
				e.Path = c.Path
				result = append(result, e)
			}
		}
		return result, nil
	}
	for p, target := range links {
		t, ok := resolveLink(baseDir, p, target, links)
		if !ok {
			continue
		}
		under := t + "/"
		if t == "" {
			under = "" // a link to the base itself: everything is beneath it
		}
		if _, linkChanged := changed[p]; linkChanged {
			tree, err := resultTree()
			if err != nil {
				return nil, err
			}
			for _, e := range tree {
				if rest, ok := strings.CutPrefix(e.Path, under); ok && rest != "" && match(p+"/"+rest, e.Kind == manifest.KindDir) {
					add(p)
					if _, fileChanged := changed[e.Path]; fileChanged {
						add(e.Path)
					}
				}
			}
			continue
		}
		for _, c := range set.Changes {
			if c.Result.Kind == manifest.KindNone {
				continue
			}
			if rest, ok := strings.CutPrefix(c.Path, under); ok && rest != "" && match(p+"/"+rest, c.Result.Kind == manifest.KindDir) {
				add(c.Path)
			}
		}
	}
	return out, nil
}

// BaseLinks are the symlinks of a manifest, path to target.
func BaseLinks(m *manifest.Manifest) map[string]string {
	links := map[string]string{}
	for _, e := range m.Entries {
		if e.Kind == manifest.KindSymlink {
			links[e.Path] = e.Target
		}
	}
	return links
}

// resolveLink resolves the symlink at p with target to the base-relative
// path of the directory it stands for ("" for the base itself), following
// every link of the tree on the way — in the target's middle too, before
// a ".." that follows it, an absolute target that names a path in the
// base — as the kernel would; false when it leaves the base or loops.
func resolveLink(baseDir, p, target string, links map[string]string) (string, bool) {
	hops := 0
	var walk func(cur string, parts []string) (string, bool)
	walk = func(cur string, parts []string) (string, bool) {
		for _, part := range parts {
			switch part {
			case "", ".":
				continue
			case "..":
				if cur == "" {
					return "", false // above the base
				}
				cur = path.Dir(cur)
				if cur == "." {
					cur = ""
				}
				continue
			}
			next := part
			if cur != "" {
				next = cur + "/" + part
			}
			t, isLink := links[next]
			if !isLink {
				cur = next
				continue
			}
			if hops++; hops > 40 {
				return "", false // a loop
			}
			from := cur
			if path.IsAbs(t) {
				rel, ok := strings.CutPrefix(t, strings.TrimSuffix(baseDir, "/"))
				if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
					return "", false // outside the base
				}
				from, t = "", rel
			}
			r, ok := walk(from, strings.Split(t, "/"))
			if !ok {
				return "", false
			}
			cur = r
		}
		return cur, true
	}
	from := path.Dir(p)
	if from == "." {
		from = ""
	}
	if path.IsAbs(target) {
		rel, ok := strings.CutPrefix(target, strings.TrimSuffix(baseDir, "/"))
		if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
			return "", false
		}
		from, target = "", rel
	}
	return walk(from, strings.Split(target, "/"))
}
