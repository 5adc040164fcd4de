# Exactly the actions the app calls, on exactly its tables and its objects
# (users/* photos, pending/* short-lived uploads). internal/dynamo/terraform_test.go checks the action lists against
# the SDK operations the code uses. The roles below hold it and nothing
# else; or attach it to the IAM user whose keys the service gets.

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

# The role ndiro runs as on an EC2 instance, through an instance profile
# (var.instance_profile): launch the instance with
# instance_profile_name (outputs.tf).
data "aws_iam_policy_document" "ec2_assume" {
  statement {
    sid     = "EC2"
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "instance" {
  count              = var.instance_profile ? 1 : 0
  name               = "${var.prefix}instance"
  description        = "ndiro on EC2: its tables and photo objects, nothing else"
  assume_role_policy = data.aws_iam_policy_document.ec2_assume.json
}

resource "aws_iam_role_policy_attachment" "instance" {
  count      = var.instance_profile ? 1 : 0
  role       = aws_iam_role.instance[0].name
  policy_arn = aws_iam_policy.app.arn
}

resource "aws_iam_instance_profile" "app" {
  count = var.instance_profile ? 1 : 0
  name  = "${var.prefix}instance"
  role  = aws_iam_role.instance[0].name
}

# The role ndiro's container runs as on ECS (var.ecs_task_role): the task
# definition's taskRoleArn (ecs_task_role_arn in outputs.tf). Only ECS
# tasks of this account in this region may assume it.
data "aws_caller_identity" "current" {}

data "aws_partition" "current" {}

data "aws_iam_policy_document" "ecs_tasks_assume" {
  statement {
    sid     = "ECSTasks"
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ecs-tasks.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
    condition {
      test     = "ArnLike"
      variable = "aws:SourceArn"
      values   = ["arn:${data.aws_partition.current.partition}:ecs:${var.region}:${data.aws_caller_identity.current.account_id}:*"]
    }
  }
}

resource "aws_iam_role" "task" {
  count              = var.ecs_task_role ? 1 : 0
  name               = "${var.prefix}task"
  description        = "ndiro on ECS: its tables and photo objects, nothing else"
  assume_role_policy = data.aws_iam_policy_document.ecs_tasks_assume.json
}

resource "aws_iam_role_policy_attachment" "task" {
  count      = var.ecs_task_role ? 1 : 0
  role       = aws_iam_role.task[0].name
  policy_arn = aws_iam_policy.app.arn
}
