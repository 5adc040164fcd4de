package dynamo_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"ndiro/internal/dynamo"
)

const terraformDir = "../../deploy/terraform"

// parseTerraform returns the body of every .tf file in deploy/terraform.
func parseTerraform(t *testing.T) []*hclsyntax.Body {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(terraformDir, "*.tf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Terraform files in %s: %v", terraformDir, err)
	}
	p := hclparse.NewParser()
	var bodies []*hclsyntax.Body
	for _, f := range files {
		file, diags := p.ParseHCLFile(f)
		if diags.HasErrors() {
			t.Fatalf("%s: %s", f, diags.Error())
		}
		bodies = append(bodies, file.Body.(*hclsyntax.Body))
	}
	return bodies
}

func blocks(bodies []*hclsyntax.Body, typ string, labels ...string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, b := range bodies {
		for _, bl := range b.Blocks {
			if bl.Type != typ || len(bl.Labels) < len(labels) {
				continue
			}
			match := true
			for i, l := range labels {
				match = match && bl.Labels[i] == l
			}
			if match {
				out = append(out, bl)
			}
		}
	}
	return out
}

// value evaluates attribute name of b; a missing attribute is cty.NilVal.
func value(t *testing.T, b *hclsyntax.Body, name string, ctx *hcl.EvalContext) cty.Value {
	t.Helper()
	a, ok := b.Attributes[name]
	if !ok {
		return cty.NilVal
	}
	v, diags := a.Expr.Value(ctx)
	if diags.HasErrors() {
		t.Fatalf("attribute %s: %s", name, diags.Error())
	}
	return v
}

func str(t *testing.T, b *hclsyntax.Body, name string, ctx *hcl.EvalContext) string {
	t.Helper()
	v := value(t, b, name, ctx)
	if v == cty.NilVal || v.Type() != cty.String {
		return ""
	}
	return v.AsString()
}

// setting renders attribute name of the only inner block typ of b ("" for
// b itself) as text: "true", "PAY_PER_REQUEST", "500"; "missing" if absent
// and "2 blocks" if the block is repeated or absent.
func setting(t *testing.T, b *hclsyntax.Body, typ, name string, ctx *hcl.EvalContext) string {
	t.Helper()
	if typ != "" {
		var found []*hclsyntax.Block
		for _, inner := range b.Blocks {
			if inner.Type == typ {
				found = append(found, inner)
			}
		}
		if len(found) != 1 {
			return fmt.Sprintf("%d blocks", len(found))
		}
		b = found[0].Body
	}
	v := value(t, b, name, ctx)
	switch {
	case v == cty.NilVal:
		return "missing"
	case v.Type() == cty.Bool:
		return fmt.Sprint(v.True())
	case v.Type() == cty.Number:
		return v.AsBigFloat().String()
	case v.Type() == cty.String:
		return v.AsString()
	}
	return v.GoString()
}

// tfVars are the variables the drift tests evaluate Terraform with.
var tfVars = &hcl.EvalContext{Variables: map[string]cty.Value{
	"var": cty.ObjectVal(map[string]cty.Value{
		"prefix":                  cty.StringVal("PFX-"),
		"max_read_request_units":  cty.NumberIntVal(500),
		"max_write_request_units": cty.NumberIntVal(200),
	}),
}}

// TestTerraformMatchesTables checks that deploy/terraform defines exactly the
// tables of internal/dynamo/table.go (names under the prefix, key schema,
// string key types, TTL attributes), so the two cannot drift, and that every
// table keeps the protections deploy/README.md promises: on-demand billing
// with throughput caps, deletion protection, point-in-time recovery,
// encryption, prevent_destroy, TTL enabled where declared, and no secondary
// indexes (CONTRIBUTING.md: no GSIs).
func TestTerraformMatchesTables(t *testing.T) {
	bodies := parseTerraform(t)
	got := map[string]dynamo.Table{}
	for _, bl := range blocks(bodies, "resource", "aws_dynamodb_table") {
		tb := dynamo.Table{
			Name:         str(t, bl.Body, "name", tfVars),
			PartitionKey: str(t, bl.Body, "hash_key", tfVars),
			SortKey:      str(t, bl.Body, "range_key", tfVars),
		}
		tb.Base = strings.TrimPrefix(tb.Name, "PFX-")
		for _, inner := range bl.Body.Blocks {
			switch inner.Type {
			case "ttl":
				tb.TTLAttribute = str(t, inner.Body, "attribute_name", tfVars)
			case "attribute":
				if ty := str(t, inner.Body, "type", tfVars); ty != "S" {
					t.Errorf("table %s: attribute %s has type %s, want S", tb.Name, str(t, inner.Body, "name", tfVars), ty)
				}
			case "global_secondary_index", "local_secondary_index":
				t.Errorf("table %s has a %s; its keys are designed so that it needs none (CONTRIBUTING.md)", tb.Name, inner.Type)
			}
		}
		settings := map[string]string{}
		want := map[string]string{
			"billing_mode":                                 "PAY_PER_REQUEST",
			"deletion_protection_enabled":                  "true",
			"point_in_time_recovery.enabled":               "true",
			"server_side_encryption.enabled":               "true",
			"lifecycle.prevent_destroy":                    "true",
			"on_demand_throughput.max_read_request_units":  "500",
			"on_demand_throughput.max_write_request_units": "200",
		}
		if tb.TTLAttribute != "" {
			want["ttl.enabled"] = "true"
		}
		for k := range want {
			blockType, name, nested := strings.Cut(k, ".")
			if !nested {
				blockType, name = "", k
			}
			settings[k] = setting(t, bl.Body, blockType, name, tfVars)
		}
		if d := cmp.Diff(want, settings); d != "" {
			t.Errorf("table %s settings (-want +terraform):\n%s", tb.Name, d)
		}
		got[tb.Base] = tb
	}
	want := map[string]dynamo.Table{}
	for _, tb := range dynamo.NewTables("PFX-").All() {
		want[tb.Base] = tb
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("deploy/terraform tables differ from internal/dynamo (-code +terraform):\n%s", d)
	}
}

// TestTerraformBucketIsPrivate checks the photo bucket's protections: every
// public-access block on, owner-enforced ownership, prevent_destroy.
func TestTerraformBucketIsPrivate(t *testing.T) {
	bodies := parseTerraform(t)
	one := func(typ string) *hclsyntax.Body {
		t.Helper()
		bl := blocks(bodies, "resource", typ, "photos")
		if len(bl) != 1 {
			t.Fatalf("%d %s.photos resources, want 1", len(bl), typ)
		}
		return bl[0].Body
	}
	pab := one("aws_s3_bucket_public_access_block")
	got := map[string]string{
		"prevent_destroy":  setting(t, one("aws_s3_bucket"), "lifecycle", "prevent_destroy", tfVars),
		"object_ownership": setting(t, one("aws_s3_bucket_ownership_controls"), "rule", "object_ownership", tfVars),
	}
	for _, k := range []string{"block_public_acls", "block_public_policy", "ignore_public_acls", "restrict_public_buckets"} {
		got[k] = setting(t, pab, "", k, tfVars)
	}
	want := map[string]string{
		"prevent_destroy": "true", "object_ownership": "BucketOwnerEnforced",
		"block_public_acls": "true", "block_public_policy": "true", "ignore_public_acls": "true", "restrict_public_buckets": "true",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("bucket settings (-want +terraform):\n%s", d)
	}
	// Short-lived uploads expire; the app may touch only its two prefixes.
	var expires string
	for _, r := range one("aws_s3_bucket_lifecycle_configuration").Blocks {
		if r.Type == "rule" && setting(t, r.Body, "filter", "prefix", tfVars) == "pending/" {
			expires = setting(t, r.Body, "expiration", "days", tfVars)
		}
	}
	if expires != "1" { // 1 day
		t.Errorf("lifecycle expiry of pending/ = %q days, want 1", expires)
	}
	docs := blocks(bodies, "data", "aws_iam_policy_document", "app")
	for _, st := range docs[0].Body.Blocks {
		if st.Type != "statement" || str(t, st.Body, "sid", nil) != "PhotoObjects" {
			continue
		}
		ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"aws_s3_bucket": cty.ObjectVal(map[string]cty.Value{
			"photos": cty.ObjectVal(map[string]cty.Value{"arn": cty.StringVal("arn:aws:s3:::b")})})}}
		var res []string
		for _, v := range value(t, st.Body, "resources", ctx).AsValueSlice() {
			res = append(res, v.AsString())
		}
		if d := cmp.Diff([]string{"arn:aws:s3:::b/users/*", "arn:aws:s3:::b/pending/*"}, res); d != "" {
			t.Errorf("photo object resources (-want +terraform):\n%s", d)
		}
	}
}

// iamActions returns the IAM actions an SDK operation needs, where they
// differ from its name (AWS's service authorization reference).
func iamActions(op string) []string {
	switch op {
	case "s3:HeadBucket", "s3:ListObjectsV2":
		return []string{"s3:ListBucket"}
	case "s3:HeadObject":
		return []string{"s3:GetObject"}
	case "s3:CopyObject": // read the source, write the copy
		return []string{"s3:GetObject", "s3:PutObject"}
	case "s3:DeleteObjects":
		return []string{"s3:DeleteObject"}
	}
	return []string{op}
}

// localOnly are SDK operations only local mode and tests use: AWS tables
// and buckets come from Terraform.
var localOnly = map[string]bool{"dynamodb:CreateTable": true, "dynamodb:DeleteTable": true}

// TestIAMPolicyMatchesCode checks that the app's IAM policy grants exactly
// the DynamoDB and S3 actions the code (outside tests) calls.
func TestIAMPolicyMatchesCode(t *testing.T) {
	inputs := regexp.MustCompile(`&(dynamodb|s3)\.(\w+)Input\{`)
	used := map[string]bool{}
	for _, dir := range []string{"../../internal", "../../cmd"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "apptest") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range inputs.FindAllStringSubmatch(string(src), -1) {
				for _, action := range iamActions(m[1] + ":" + m[2]) {
					if !localOnly[action] {
						used[action] = true
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	granted := map[string]bool{}
	docs := blocks(parseTerraform(t), "data", "aws_iam_policy_document", "app")
	if len(docs) != 1 {
		t.Fatalf("found %d app policy documents, want 1", len(docs))
	}
	for _, st := range docs[0].Body.Blocks {
		if st.Type != "statement" {
			continue
		}
		v, diags := st.Body.Attributes["actions"].Expr.Value(nil)
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		for _, a := range v.AsValueSlice() {
			granted[a.AsString()] = true
		}
	}
	if d := cmp.Diff(keys(used), keys(granted)); d != "" {
		t.Errorf("IAM actions differ from the SDK calls in the code (-code +policy):\n%s", d)
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
