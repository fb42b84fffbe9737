package imagedigest

import "github.com/google/go-containerregistry/pkg/authn"

func basic(user, password string) authn.Authenticator {
	return &authn.Basic{Username: user, Password: password}
}
