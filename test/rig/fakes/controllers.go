package fakes

import (
	"context"
	"reflect"
	"time"

	"github.com/rancher/wrangler/v2/pkg/generic"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// shared is what both controllers answer alike. Registering a handler is accepted and ignored:
// the tests call the handlers themselves.
type shared[T Object[T]] struct{ *Store[T] }

func (shared[T]) Informer() cache.SharedIndexInformer                              { return nil }
func (shared[T]) GroupVersionKind() schema.GroupVersionKind                        { return schema.GroupVersionKind{} }
func (shared[T]) AddGenericHandler(context.Context, string, generic.Handler)       {}
func (shared[T]) AddGenericRemoveHandler(context.Context, string, generic.Handler) {}
func (shared[T]) Updater() generic.Updater                                         { return nil }
func (shared[T]) OnChange(context.Context, string, generic.ObjectHandler[T])       {}
func (shared[T]) OnRemove(context.Context, string, generic.ObjectHandler[T])       {}
func (c shared[T]) Create(o T) (T, error)                                          { return c.create(o) }
func (c shared[T]) Update(o T) (T, error)                                          { return c.write("update", o) }
func (c shared[T]) UpdateStatus(o T) (T, error)                                    { return c.write("status", o) }

// Controller is the generated controller of a namespaced kind, served by a Store.
type Controller[T Object[T], TList runtime.Object] struct{ shared[T] }

// NewController returns the controller of a namespaced kind holding objs.
func NewController[T Object[T], TList runtime.Object](resource schema.GroupResource, objs ...T) *Controller[T, TList] {
	return &Controller[T, TList]{shared[T]{NewStore(resource, objs...)}}
}

func (c *Controller[T, TList]) Enqueue(namespace, name string) { c.enqueue(namespace, name, 0, false) }
func (c *Controller[T, TList]) EnqueueAfter(namespace, name string, d time.Duration) {
	c.enqueue(namespace, name, d, true)
}
func (c *Controller[T, TList]) Cache() generic.CacheInterface[T] { return namespacedCache[T]{c.Store} }
func (c *Controller[T, TList]) Delete(namespace, name string, opts *metav1.DeleteOptions) error {
	return c.delete(namespace, name, opts)
}
func (c *Controller[T, TList]) Get(namespace, name string, _ metav1.GetOptions) (T, error) {
	return c.get(namespace, name)
}
func (c *Controller[T, TList]) List(namespace string, opts metav1.ListOptions) (TList, error) {
	return listOf[T, TList](c.Store, namespace, opts)
}
func (c *Controller[T, TList]) Watch(string, metav1.ListOptions) (watch.Interface, error) {
	return nil, errNotServed("watch")
}
func (c *Controller[T, TList]) Patch(string, string, types.PatchType, []byte, ...string) (T, error) {
	var zero T
	return zero, errNotServed("patch")
}
func (c *Controller[T, TList]) WithImpersonation(rest.ImpersonationConfig) (generic.ClientInterface[T, TList], error) {
	return nil, errNotServed("impersonation")
}

type namespacedCache[T Object[T]] struct{ s *Store[T] }

func (c namespacedCache[T]) Get(namespace, name string) (T, error) { return c.s.get(namespace, name) }
func (c namespacedCache[T]) List(namespace string, selector labels.Selector) ([]T, error) {
	return c.s.list(namespace, selector), nil
}
func (c namespacedCache[T]) AddIndexer(name string, indexer generic.Indexer[T]) {
	c.s.addIndexer(name, indexer)
}
func (c namespacedCache[T]) GetByIndex(indexName, key string) ([]T, error) {
	return c.s.getByIndex(indexName, key)
}

// ClusterController is the generated controller of a cluster-scoped kind, served by a Store.
type ClusterController[T Object[T], TList runtime.Object] struct{ shared[T] }

// NewClusterController returns the controller of a cluster-scoped kind holding objs.
func NewClusterController[T Object[T], TList runtime.Object](resource schema.GroupResource, objs ...T) *ClusterController[T, TList] {
	return &ClusterController[T, TList]{shared[T]{NewStore(resource, objs...)}}
}

func (c *ClusterController[T, TList]) Enqueue(name string) { c.enqueue("", name, 0, false) }
func (c *ClusterController[T, TList]) EnqueueAfter(name string, d time.Duration) {
	c.enqueue("", name, d, true)
}
func (c *ClusterController[T, TList]) Cache() generic.NonNamespacedCacheInterface[T] {
	return clusterCache[T]{c.Store}
}
func (c *ClusterController[T, TList]) Delete(name string, opts *metav1.DeleteOptions) error {
	return c.delete("", name, opts)
}
func (c *ClusterController[T, TList]) Get(name string, _ metav1.GetOptions) (T, error) {
	return c.get("", name)
}
func (c *ClusterController[T, TList]) List(opts metav1.ListOptions) (TList, error) {
	return listOf[T, TList](c.Store, "", opts)
}
func (c *ClusterController[T, TList]) Watch(metav1.ListOptions) (watch.Interface, error) {
	return nil, errNotServed("watch")
}
func (c *ClusterController[T, TList]) Patch(string, types.PatchType, []byte, ...string) (T, error) {
	var zero T
	return zero, errNotServed("patch")
}
func (c *ClusterController[T, TList]) WithImpersonation(rest.ImpersonationConfig) (generic.NonNamespacedClientInterface[T, TList], error) {
	return nil, errNotServed("impersonation")
}

type clusterCache[T Object[T]] struct{ s *Store[T] }

func (c clusterCache[T]) Get(name string) (T, error) { return c.s.get("", name) }
func (c clusterCache[T]) List(selector labels.Selector) ([]T, error) {
	return c.s.list("", selector), nil
}
func (c clusterCache[T]) AddIndexer(name string, indexer generic.Indexer[T]) {
	c.s.addIndexer(name, indexer)
}
func (c clusterCache[T]) GetByIndex(indexName, key string) ([]T, error) {
	return c.s.getByIndex(indexName, key)
}

// listOf answers a client's List: the objects of namespace (all when empty) that the options'
// label and field selectors (metadata.name, metadata.namespace) match, in the generated list type.
func listOf[T Object[T], TList runtime.Object](s *Store[T], namespace string, opts metav1.ListOptions) (TList, error) {
	var list TList
	selector, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return list, err
	}
	byField, err := fields.ParseSelector(opts.FieldSelector)
	if err != nil {
		return list, err
	}
	out := reflect.New(reflect.TypeOf(list).Elem())
	items := out.Elem().FieldByName("Items")
	for _, o := range s.list(namespace, selector) {
		if byField.Matches(fields.Set{"metadata.name": o.GetName(), "metadata.namespace": o.GetNamespace()}) {
			items.Set(reflect.Append(items, reflect.ValueOf(o).Elem()))
		}
	}
	return out.Interface().(TList), nil
}
