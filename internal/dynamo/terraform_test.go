package dynamo_test

import (
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

func str(t *testing.T, b *hclsyntax.Body, name string, ctx *hcl.EvalContext) string {
	t.Helper()
	a, ok := b.Attributes[name]
	if !ok {
		return ""
	}
	v, diags := a.Expr.Value(ctx)
	if diags.HasErrors() {
		t.Fatalf("attribute %s: %s", name, diags.Error())
	}
	return v.AsString()
}

// TestTerraformMatchesTables checks that deploy/terraform defines exactly the
// tables of internal/dynamo/table.go: names under the prefix, key schema,
// string key types and TTL attributes, so the two cannot drift.
func TestTerraformMatchesTables(t *testing.T) {
	bodies := parseTerraform(t)
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{
		"var": cty.ObjectVal(map[string]cty.Value{"prefix": cty.StringVal("PFX-")}),
	}}
	got := map[string]dynamo.Table{}
	for _, bl := range blocks(bodies, "resource", "aws_dynamodb_table") {
		tb := dynamo.Table{
			Name:         str(t, bl.Body, "name", ctx),
			PartitionKey: str(t, bl.Body, "hash_key", ctx),
			SortKey:      str(t, bl.Body, "range_key", ctx),
		}
		tb.Base = strings.TrimPrefix(tb.Name, "PFX-")
		for _, inner := range bl.Body.Blocks {
			switch inner.Type {
			case "ttl":
				tb.TTLAttribute = str(t, inner.Body, "attribute_name", ctx)
			case "attribute":
				if ty := str(t, inner.Body, "type", ctx); ty != "S" {
					t.Errorf("table %s: attribute %s has type %s, want S", tb.Name, str(t, inner.Body, "name", ctx), ty)
				}
			}
		}
		for _, need := range []string{"point_in_time_recovery", "server_side_encryption", "on_demand_throughput", "lifecycle"} {
			found := false
			for _, inner := range bl.Body.Blocks {
				found = found || inner.Type == need
			}
			if !found {
				t.Errorf("table %s has no %s block", tb.Name, need)
			}
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
				action := m[1] + ":" + m[2]
				switch action {
				case "s3:HeadBucket", "s3:ListObjectsV2":
					action = "s3:ListBucket"
				}
				if !localOnly[action] {
					used[action] = true
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
