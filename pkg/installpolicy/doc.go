// Package installpolicy decides what the operator may install into a guest cluster, where it is
// cluster-owner: Policy composes the deployment's allow-lists of chart sources (chartsource),
// images (images), values (values) and chart archives (chartarchive), and a Plan is one chart as
// kube-fip-config asks for it, whose renders (render) are judged object by object (approve).
// Every decision is an allow-list: what is not named is refused, with a guestchart.Refusal.
// config parses the text of kube-fip-config; helminstall applies what a Plan approved.
package installpolicy
