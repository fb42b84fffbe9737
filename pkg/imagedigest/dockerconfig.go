package imagedigest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
)

// MaxDockerConfig bounds the .dockerconfigjson the operator reads and copies into the guests.
const MaxDockerConfig = 64 << 10

// DockerConfig is the credentials of a .dockerconfigjson, by registry host.
type DockerConfig struct {
	auths map[string]authn.AuthConfig
}

// dockerConfigFile is the part of a .dockerconfigjson the kubelet and the operator read.
type dockerConfigFile struct {
	Auths map[string]struct {
		Username string `json:"username,omitempty"`
		Password string `json:"password,omitempty"`
		Auth     string `json:"auth,omitempty"`
	} `json:"auths"`
}

// ParseDockerConfig reads data, a .dockerconfigjson. The error never repeats the data.
func ParseDockerConfig(data []byte) (DockerConfig, error) {
	if len(data) > MaxDockerConfig {
		return DockerConfig{}, fmt.Errorf("is larger than %d KiB", MaxDockerConfig>>10)
	}
	var f dockerConfigFile
	if err := json.Unmarshal(data, &f); err != nil || f.Auths == nil {
		return DockerConfig{}, errors.New(`is not a Docker config: a JSON object with "auths"`)
	}
	d := DockerConfig{auths: map[string]authn.AuthConfig{}}
	for key, a := range f.Auths {
		c := authn.AuthConfig{Username: a.Username, Password: a.Password}
		if a.Auth != "" {
			decoded, err := base64.StdEncoding.DecodeString(a.Auth)
			user, password, ok := strings.Cut(string(decoded), ":")
			if err != nil || !ok {
				return DockerConfig{}, errors.New("has an auth that is not base64 of user:password")
			}
			c.Username, c.Password = user, password
		}
		d.auths[hostOf(key)] = c
	}
	return d, nil
}

// hostOf is the registry host a key of auths names: the kubelet takes "host", "https://host" and
// "https://host/v1/" alike.
func hostOf(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, _, _ := strings.Cut(key, "/")
	return strings.ToLower(host)
}

// Secrets are the credentials' secret parts, for masking in messages.
func (d DockerConfig) Secrets() []string {
	var out []string
	for _, a := range d.auths {
		if a.Password != "" {
			out = append(out, a.Password, base64.StdEncoding.EncodeToString([]byte(a.Username+":"+a.Password)))
		}
	}
	return out
}

// authFor is the authenticator for registry host, anonymous when the config has none for it.
func (d DockerConfig) authFor(host string) authn.Authenticator {
	if c, ok := d.auths[strings.ToLower(host)]; ok {
		return authn.FromConfig(c)
	}
	return authn.Anonymous
}
