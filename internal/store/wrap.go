package store

import (
	"context"
	"io"
)

// Kind is a class of call by how long it may take (the storage budgets).
type Kind int

const (
	// KindItem is a call on one item or one blob's metadata.
	KindItem Kind = iota
	// KindQuery is a call on many items or keys.
	KindQuery
	// KindTransfer is a call moving a blob's bytes.
	KindTransfer
)

func (k Kind) String() string {
	switch k {
	case KindItem:
		return "item"
	case KindTransfer:
		return "transfer"
	}
	return "query"
}

// Op is one call through the seam as a Middleware sees it.
type Op struct {
	// Service is "items" or "blobs"; Name the method ("Get", "Put",
	// "Update", "Delete", "Query", "Scan", "BatchDelete"; for blobs
	// "Put", "Get", "Head", "Copy", "Delete", "List").
	Service, Name string
	Kind          Kind
	// Write is true for a call that changes what is stored.
	Write bool
	// Table is the table of an item call; Key the partition key of an
	// item call or the key of a blob call ("" for a Scan or a List).
	Table, Key string
	// Body is set, after the call returned, for a blob Get: the reader
	// the caller will read, which a middleware may wrap (a budget that
	// runs on while the body is read).
	Body *io.ReadCloser
}

// Middleware runs call, one call through the seam, and returns its
// error: it may refuse it (the lease's write gate), bound it (a budget),
// count it (metrics) or fail it (tests' faults).
type Middleware func(ctx context.Context, op Op, call func(context.Context) error) error

// chain runs call through mws, the first outermost.
func chain(mws []Middleware, ctx context.Context, op Op, call func(context.Context) error) error {
	if len(mws) == 0 {
		return call(ctx)
	}
	return mws[0](ctx, op, func(ctx context.Context) error { return chain(mws[1:], ctx, op, call) })
}

// WrapItems returns items with every call run through mws, the first
// outermost.
func WrapItems(items Items, mws ...Middleware) Items {
	if len(mws) == 0 {
		return items
	}
	return &wrappedItems{items, mws}
}

type wrappedItems struct {
	in  Items
	mws []Middleware
}

func (w *wrappedItems) op(name string, kind Kind, write bool, t Table, key string) Op {
	return Op{Service: "items", Name: name, Kind: kind, Write: write, Table: t.Name, Key: key}
}

func (w *wrappedItems) Get(ctx context.Context, t Table, k Key, r Read) (item Item, found bool, err error) {
	err = chain(w.mws, ctx, w.op("Get", KindItem, false, t, k.PK), func(ctx context.Context) (err error) {
		item, found, err = w.in.Get(ctx, t, k, r)
		return err
	})
	return item, found, err
}

func (w *wrappedItems) Put(ctx context.Context, t Table, item Item, cond Cond) (old Item, err error) {
	k, _ := t.KeyOf(item)
	err = chain(w.mws, ctx, w.op("Put", KindItem, true, t, k.PK), func(ctx context.Context) (err error) {
		old, err = w.in.Put(ctx, t, item, cond)
		return err
	})
	return old, err
}

func (w *wrappedItems) Update(ctx context.Context, t Table, k Key, u Update, cond Cond) (updated Item, err error) {
	err = chain(w.mws, ctx, w.op("Update", KindItem, true, t, k.PK), func(ctx context.Context) (err error) {
		updated, err = w.in.Update(ctx, t, k, u, cond)
		return err
	})
	return updated, err
}

func (w *wrappedItems) Delete(ctx context.Context, t Table, k Key, cond Cond) (old Item, err error) {
	err = chain(w.mws, ctx, w.op("Delete", KindItem, true, t, k.PK), func(ctx context.Context) (err error) {
		old, err = w.in.Delete(ctx, t, k, cond)
		return err
	})
	return old, err
}

func (w *wrappedItems) Query(ctx context.Context, q Query) (p Page, err error) {
	err = chain(w.mws, ctx, w.op("Query", KindQuery, false, q.Table, q.PK), func(ctx context.Context) (err error) {
		p, err = w.in.Query(ctx, q)
		return err
	})
	return p, err
}

func (w *wrappedItems) Scan(ctx context.Context, s Scan) (p Page, err error) {
	err = chain(w.mws, ctx, w.op("Scan", KindQuery, false, s.Table, ""), func(ctx context.Context) (err error) {
		p, err = w.in.Scan(ctx, s)
		return err
	})
	return p, err
}

func (w *wrappedItems) BatchDelete(ctx context.Context, t Table, keys []Key) error {
	pk := ""
	if len(keys) > 0 {
		pk = keys[0].PK
	}
	return chain(w.mws, ctx, w.op("BatchDelete", KindQuery, true, t, pk), func(ctx context.Context) error {
		return w.in.BatchDelete(ctx, t, keys)
	})
}

// WrapBlobs returns blobs with every call run through mws, the first
// outermost.
func WrapBlobs(blobs Blobs, mws ...Middleware) Blobs {
	if len(mws) == 0 {
		return blobs
	}
	return &wrappedBlobs{blobs, mws}
}

type wrappedBlobs struct {
	in  Blobs
	mws []Middleware
}

func blobOp(name string, kind Kind, write bool, key string) Op {
	return Op{Service: "blobs", Name: name, Kind: kind, Write: write, Key: key}
}

func (w *wrappedBlobs) Put(ctx context.Context, key string, body io.Reader, size int64, meta Meta) error {
	return chain(w.mws, ctx, blobOp("Put", KindTransfer, true, key), func(ctx context.Context) error {
		return w.in.Put(ctx, key, body, size, meta)
	})
}

func (w *wrappedBlobs) Get(ctx context.Context, key string, off, n int64) (rc io.ReadCloser, info Info, err error) {
	op := blobOp("Get", KindTransfer, false, key)
	op.Body = &rc
	err = chain(w.mws, ctx, op, func(ctx context.Context) (err error) {
		rc, info, err = w.in.Get(ctx, key, off, n)
		return err
	})
	if err != nil && rc != nil {
		rc.Close()
		rc = nil
	}
	return rc, info, err
}

func (w *wrappedBlobs) Head(ctx context.Context, key string) (info Info, err error) {
	err = chain(w.mws, ctx, blobOp("Head", KindItem, false, key), func(ctx context.Context) (err error) {
		info, err = w.in.Head(ctx, key)
		return err
	})
	return info, err
}

func (w *wrappedBlobs) Copy(ctx context.Context, src, dst string, meta *Meta) error {
	return chain(w.mws, ctx, blobOp("Copy", KindTransfer, true, dst), func(ctx context.Context) error {
		return w.in.Copy(ctx, src, dst, meta)
	})
}

func (w *wrappedBlobs) Delete(ctx context.Context, keys ...string) error {
	key := ""
	if len(keys) > 0 {
		key = keys[0]
	}
	return chain(w.mws, ctx, blobOp("Delete", KindQuery, true, key), func(ctx context.Context) error {
		return w.in.Delete(ctx, keys...)
	})
}

func (w *wrappedBlobs) List(ctx context.Context, prefix, after string, limit int) (infos []Info, next string, err error) {
	err = chain(w.mws, ctx, blobOp("List", KindQuery, false, prefix), func(ctx context.Context) (err error) {
		infos, next, err = w.in.List(ctx, prefix, after, limit)
		return err
	})
	return infos, next, err
}
