// Package chartarchive decides which chart archives may be unpacked at all: the pinned upstream
// archives that ship with the operator (pinned.go, bundle.go) and those the deployment allows by
// digest. An archive is loaded only when its digest is one of those, checked before anything is
// unpacked, and within bounds (load.go); a chart package with hooks, CRDs, dependencies, or
// another name or version than the one asked for is refused before anything renders
// (contents.go).
package chartarchive
