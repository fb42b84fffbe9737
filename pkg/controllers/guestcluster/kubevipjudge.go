package guestcluster

import (
	"errors"
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/kubevip"
)

// kubevipJudge shows every kube-vip container Helm renders to kubevip.Judge, as the post-renderer
// of the kube-vip release, and remembers what was decided for the pass's Events.
type kubevipJudge struct {
	decisions []kubevip.Decision
}

// isKubevip reports whether an image is kube-vip itself (not kube-vip-cloud-provider).
func isKubevip(image string) bool {
	ref, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return path.Base(ref) == "kube-vip"
}

func (k *kubevipJudge) judge(workload string, c *corev1.Container) error {
	if !isKubevip(c.Image) {
		return nil
	}
	env := make([]kubevip.EnvVar, 0, len(c.Env))
	from := map[string]*corev1.EnvVarSource{}
	for _, e := range c.Env {
		env = append(env, kubevip.EnvVar{Name: e.Name, Value: e.Value, FromRef: e.ValueFrom != nil})
		from[e.Name] = e.ValueFrom
	}
	d, err := kubevip.Judge(c.Image, env)
	if err != nil {
		var r *kubevip.Refusal
		if errors.As(err, &r) {
			r.Message = fmt.Sprintf("%s, container %s: %s", workload, c.Name, r.Message)
		}
		return err
	}
	c.Env = c.Env[:0]
	for _, e := range d.Env {
		v := corev1.EnvVar{Name: e.Name, Value: e.Value}
		if e.FromRef {
			v = corev1.EnvVar{Name: e.Name, ValueFrom: from[e.Name]}
		}
		c.Env = append(c.Env, v)
	}
	k.decisions = append(k.decisions, d)
	return nil
}

// images names the images in use: as rendered when this pass rendered the chart, else as the
// values name them.
func (k *kubevipJudge) images(chart config.Chart) string {
	if len(k.decisions) > 0 {
		var names []string
		for _, d := range k.decisions {
			names = append(names, fmt.Sprintf("%s (kube-vip %s)", d.Image, d.Generation))
		}
		return ", image " + strings.Join(names, ", ")
	}
	img, _ := chart.Values["image"].(map[string]interface{})
	repo, _ := img["repository"].(string)
	tag, _ := img["tag"].(string)
	switch {
	case repo == "":
		return ""
	case tag == "":
		return ", image " + repo + " at the chart's appVersion"
	}
	return ", image " + repo + ":" + tag
}

// record makes an Event of each translation and of variables the image ignores.
func (k *kubevipJudge) record(c *controller, p *pass) {
	for _, d := range k.decisions {
		if len(d.Translated) > 0 {
			c.Recorder.Eventf(p.fip, v1.EventType(v1.ReasonKubevipTranslated), v1.ReasonKubevipTranslated,
				"guest cluster %s: kube-vip %s reads its environment as %s does: %s", p.cluster, d.Image, d.Generation, strings.Join(d.Translated, "; "))
		}
		if len(d.Ignored) > 0 {
			c.Recorder.Eventf(p.fip, v1.EventType(v1.ReasonKubevipIgnored), v1.ReasonKubevipIgnored,
				"guest cluster %s: kube-vip %s does not read %s, which the chart sets; remove them from kubevipChartValues or use a newer image",
				p.cluster, d.Image, strings.Join(d.Ignored, ", "))
		}
	}
}
