# Exactly the actions the app calls, on exactly its tables and its objects
# (users/* photos, pending/* short-lived uploads). internal/dynamo/terraform_test.go checks the action lists against
# the SDK operations the code uses. Attach the policy to the instance's role
# (or the user whose keys the service gets).

data "aws_iam_policy_document" "app" {
  statement {
    sid = "Tables"
    actions = [
      "dynamodb:BatchWriteItem",
      "dynamodb:DeleteItem",
      "dynamodb:DescribeTable",
      "dynamodb:GetItem",
      "dynamodb:PutItem",
      "dynamodb:Query",
      "dynamodb:Scan",
      "dynamodb:UpdateItem",
    ]
    resources = [
      aws_dynamodb_table.users.arn,
      aws_dynamodb_table.meals.arn,
      aws_dynamodb_table.shares.arn,
      aws_dynamodb_table.invites.arn,
    ]
  }

  statement {
    sid = "PhotoObjects"
    actions = [
      "s3:DeleteObject",
      "s3:GetObject",
      "s3:PutObject",
    ]
    resources = [
      "${aws_s3_bucket.photos.arn}/users/*",
      "${aws_s3_bucket.photos.arn}/pending/*",
    ]
  }

  # HeadBucket (the start-up check) and ListObjectsV2 (account deletion,
  # the monitor) need s3:ListBucket on the bucket.
  statement {
    sid       = "PhotoBucket"
    actions   = ["s3:ListBucket"]
    resources = [aws_s3_bucket.photos.arn]
  }
}

resource "aws_iam_policy" "app" {
  name        = "${var.prefix}app"
  description = "ndiro: its four DynamoDB tables and its photo objects, nothing else"
  policy      = data.aws_iam_policy_document.app.json
}
