//go:build tools

// Package traefik pins Traefik's command, which scripts/build-traefik builds.
package traefik

import _ "github.com/traefik/traefik/v3/cmd/traefik"
