package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"ndiro/internal/config"
)

// target is where `ndiro backup` writes: a directory or an S3 prefix.
// Names are slash-separated and relative ("{escaped ID}/2026-09-01.zip").
type target interface {
	// put writes the file name whole or not at all: a reader of the
	// target sees the old file (or none) until write has returned nil.
	put(ctx context.Context, name string, write func(io.Writer) error) error
	// list returns the name of every file under the target.
	list(ctx context.Context) ([]string, error)
	// remove deletes the file name.
	remove(ctx context.Context, name string) error
}

// openTarget parses --to: "s3://bucket/prefix" (reached with the AWS
// settings of the environment), else a directory, which must exist.
func openTarget(ctx context.Context, to string, cfg config.Config, getenv func(string) string) (target, error) {
	if rest, ok := strings.CutPrefix(to, "s3://"); ok {
		bucket, prefix, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return nil, fmt.Errorf("ndiro backup: --to %q names no bucket; write s3://bucket/prefix", to)
		}
		if prefix != "" && !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(cfg.Region))
		if err != nil {
			return nil, fmt.Errorf("aws config: %w", err)
		}
		m := &Main{cfg: cfg, getenv: getenv}
		return &s3Target{s3: s3.NewFromConfig(awsCfg, m.s3Compat), bucket: bucket, prefix: prefix}, nil
	}
	st, err := os.Stat(to)
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("ndiro backup: --to %q is not a directory (create it first, or write s3://bucket/prefix)", to)
	}
	return dirTarget(to), nil
}

// dirTarget is a directory: each file is written to a temporary file
// beside it, synced, renamed over the name and the folder synced, so a
// crash leaves the old file or the new one, never half of one.
type dirTarget string

// tempPrefix starts the temporary files of dirTarget.put; list skips them.
const tempPrefix = ".partial-"

func (d dirTarget) put(_ context.Context, name string, write func(io.Writer) error) (err error) {
	path := filepath.Join(string(d), filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), tempPrefix+"*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := write(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func (d dirTarget) list(context.Context) ([]string, error) {
	var names []string
	err := filepath.WalkDir(string(d), func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || strings.HasPrefix(e.Name(), tempPrefix) {
			return err
		}
		rel, err := filepath.Rel(string(d), path)
		if err != nil {
			return err
		}
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	return names, err
}

func (d dirTarget) remove(_ context.Context, name string) error {
	path := filepath.Join(string(d), filepath.FromSlash(name))
	if err := os.Remove(path); err != nil {
		return err
	}
	// The account's folder goes with its last archive.
	if err := os.Remove(filepath.Dir(path)); err != nil && !errors.Is(err, fs.ErrExist) && !isNotEmpty(err) {
		return err
	}
	return nil
}

// isNotEmpty reports whether err is a folder removal refused because the
// folder holds files.
func isNotEmpty(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not empty")
}

// s3Target is a bucket prefix. A file goes up as one multipart upload,
// part by part, as the archive is written (memory: one part), and is
// there only once the upload completes; a failure aborts it. (The SDK's
// upload manager does this too, but is deprecated in favour of a
// transfer manager that is not yet at 1.0.)
type s3Target struct {
	s3     *s3.Client
	bucket string
	prefix string
}

// partSize is the size of each uploaded part but the last: S3 takes at
// least 5 MiB and at most 10,000 parts, so an archive may reach 160 GiB.
const partSize = 16 << 20

func (t *s3Target) put(ctx context.Context, name string, write func(io.Writer) error) (err error) {
	key := aws.String(t.prefix + name)
	up, err := t.s3.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(t.bucket), Key: key, ContentType: aws.String("application/zip")})
	if err != nil {
		return fmt.Errorf("s3 upload %s: %w", *key, err)
	}
	defer func() {
		if err != nil {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			t.s3.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: aws.String(t.bucket), Key: key, UploadId: up.UploadId})
		}
	}()
	pw := &partWriter{ctx: ctx, t: t, key: key, id: up.UploadId}
	if err := write(pw); err != nil {
		return err
	}
	if err := pw.flush(); err != nil {
		return err
	}
	_, err = t.s3.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(t.bucket), Key: key, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: pw.parts},
	})
	if err != nil {
		return fmt.Errorf("s3 upload %s: %w", *key, err)
	}
	return nil
}

// partWriter collects what is written into parts of partSize and uploads
// each as it fills; flush uploads the last (at least one, maybe empty).
type partWriter struct {
	ctx   context.Context
	t     *s3Target
	key   *string
	id    *string
	buf   bytes.Buffer
	parts []types.CompletedPart
}

func (p *partWriter) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		room := partSize - p.buf.Len()
		chunk := b[:min(room, len(b))]
		p.buf.Write(chunk)
		n += len(chunk)
		b = b[len(chunk):]
		if p.buf.Len() == partSize {
			if err := p.flush(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

func (p *partWriter) flush() error {
	if p.buf.Len() == 0 && len(p.parts) > 0 {
		return nil
	}
	num := aws.Int32(int32(len(p.parts) + 1))
	out, err := p.t.s3.UploadPart(p.ctx, &s3.UploadPartInput{
		Bucket: aws.String(p.t.bucket), Key: p.key, UploadId: p.id, PartNumber: num,
		Body: bytes.NewReader(p.buf.Bytes()), ContentLength: aws.Int64(int64(p.buf.Len())),
	})
	if err != nil {
		return fmt.Errorf("s3 upload %s part %d: %w", *p.key, *num, err)
	}
	p.parts = append(p.parts, types.CompletedPart{ETag: out.ETag, PartNumber: num})
	p.buf.Reset()
	return nil
}

func (t *s3Target) list(ctx context.Context) ([]string, error) {
	var names []string
	p := s3.NewListObjectsV2Paginator(t.s3, &s3.ListObjectsV2Input{Bucket: aws.String(t.bucket), Prefix: aws.String(t.prefix)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range out.Contents {
			names = append(names, strings.TrimPrefix(aws.ToString(o.Key), t.prefix))
		}
	}
	return names, nil
}

func (t *s3Target) remove(ctx context.Context, name string) error {
	_, err := t.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(t.bucket), Key: aws.String(t.prefix + name)})
	return err
}
