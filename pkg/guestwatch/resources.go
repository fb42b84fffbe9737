package guestwatch

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
)

// servicesStream watches the guest's kube-vip Services, in every namespace.
func (w *clusterWatch) servicesStream() *stream {
	st := &stream{what: "kube-vip Services", wake: make(chan struct{}, 1),
		request: guest.WatchRequest{Resource: "services", LabelSelector: kubevipconfig.ImplementationLabel}}
	st.relist = func(ctx context.Context, notify bool) (string, error) {
		list, err := kubevipconfig.ListServices(ctx, w.client.List.Core)
		if err != nil {
			return "", err
		}
		services := make(map[string]kubevipconfig.ServiceState, len(list.Services))
		for _, s := range list.Services {
			services[s.String()] = s
		}
		w.mu.Lock()
		again := st.tried
		w.services, w.limited = services, list.Limited
		w.mu.Unlock()
		if again && notify {
			// What happened while the watch was away is not known in detail: a pass judges.
			w.changed()
		}
		return list.ResourceVersion, nil
	}
	st.apply = func(eventType string, object json.RawMessage) (string, error) {
		var svc corev1.Service
		if err := json.Unmarshal(object, &svc); err != nil {
			return "", err
		}
		w.applyService(eventType, &svc)
		return svc.ResourceVersion, nil
	}
	return st
}

// applyService changes the state by one event of svc, and queues a pass when the change matters
// to the cluster's addresses: svc asks for or holds one of them before or after it, or its
// addresses stop or start being read (kubevipconfig.MaxServiceAddresses).
func (w *clusterWatch) applyService(eventType string, svc *corev1.Service) {
	now, keep := kubevipconfig.ServiceAddresses(svc)
	key := now.String()
	w.mu.Lock()
	before, had := w.services[key]
	switch {
	case eventType == "DELETED" || !keep:
		delete(w.services, key)
	case !had && len(w.services) >= kubevipconfig.MaxServices:
		w.limited = tooMany()
	default:
		w.services[key] = now
	}
	after, has := w.services[key]
	matters := (had && w.names(before)) || (has && w.names(after)) || (had || has) && before.Oversized != after.Oversized
	w.mu.Unlock()
	if matters {
		w.changed()
	}
}

// daemonSetPage and maxDaemonSetPages bound the list of kube-vip's namespace's DaemonSets: a page
// of twenty takes some 5,000 JSON values, well within an answer's budget.
const (
	daemonSetPage     = 20
	maxDaemonSetPages = 10
)

// daemonSetsStream watches the DaemonSets of kube-vip's namespace; of them it keeps those ref's
// judgement reads (kubevipconfig.KubevipState): the operator's and the original operator's names.
func (w *clusterWatch) daemonSetsStream(ref kubevipconfig.KubevipRef) *stream {
	st := &stream{what: "DaemonSets in " + ref.Namespace, wake: make(chan struct{}, 1),
		request: guest.WatchRequest{Group: "apps", Resource: "daemonsets", Namespace: ref.Namespace}}
	wanted := func(name string) bool { return name == ref.Name || name == kubevipconfig.LegacyKubevipName }
	st.relist = func(ctx context.Context, notify bool) (string, error) {
		kept := map[string]kubevipconfig.DaemonSetStatus{}
		opts := metav1.ListOptions{Limit: daemonSetPage}
		var rv string
		for pages := 1; ; pages++ {
			list, err := w.client.List.Apps.DaemonSets(ref.Namespace).List(ctx, opts)
			if err != nil {
				return "", fmt.Errorf("listing the DaemonSets in the guest's %s: %w", ref.Namespace, err)
			}
			if pages == 1 {
				rv = list.ResourceVersion
			}
			for i := range list.Items {
				if ds := &list.Items[i]; wanted(ds.Name) {
					kept[ds.Name] = kubevipconfig.DaemonSetStatusOf(ds)
				}
			}
			if list.Continue == "" {
				break
			}
			if pages == maxDaemonSetPages {
				return "", fmt.Errorf("the guest's namespace %s has more than %d DaemonSets: kube-vip's is not looked for among them", ref.Namespace, pages*daemonSetPage)
			}
			opts.Continue = list.Continue
		}
		w.mu.Lock()
		again := st.tried
		w.daemonSets = kept
		w.mu.Unlock()
		if again && notify {
			w.changed()
		}
		return rv, nil
	}
	st.apply = func(eventType string, object json.RawMessage) (string, error) {
		var ds appsv1.DaemonSet
		if err := json.Unmarshal(object, &ds); err != nil {
			return "", err
		}
		if !wanted(ds.Name) {
			return ds.ResourceVersion, nil
		}
		w.mu.Lock()
		before, had := w.daemonSets[ds.Name]
		if eventType == "DELETED" {
			delete(w.daemonSets, ds.Name)
		} else {
			w.daemonSets[ds.Name] = kubevipconfig.DaemonSetStatusOf(&ds)
		}
		after, has := w.daemonSets[ds.Name]
		w.mu.Unlock()
		if had != has || judged(before) != judged(after) {
			w.changed()
		}
		return ds.ResourceVersion, nil
	}
	return st
}

// judgedDaemonSet is what the judgement of a kube-vip DaemonSet reads of it.
type judgedDaemonSet struct {
	observed                  bool
	desired, ready            int32
	release, releaseNamespace string
}

func judged(d kubevipconfig.DaemonSetStatus) judgedDaemonSet {
	return judgedDaemonSet{observed: d.ObservedGeneration >= d.Generation, desired: d.Desired, ready: d.Ready,
		release: d.Release, releaseNamespace: d.ReleaseNamespace}
}
