# The four tables of ndiro. Names, keys and TTL attributes must match
# internal/dynamo/table.go; internal/dynamo/terraform_test.go checks that they
# do. Every key attribute is a string. No GSIs: see CLAUDE.md.

resource "aws_dynamodb_table" "users" {
  name                        = "${var.prefix}users"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "user_id"
  deletion_protection_enabled = true

  attribute {
    name = "user_id"
    type = "S"
  }

  on_demand_throughput {
    max_read_request_units  = var.max_read_request_units
    max_write_request_units = var.max_write_request_units
  }

  point_in_time_recovery {
    enabled = true
  }

  server_side_encryption {
    enabled = true
  }

  lifecycle {
    prevent_destroy = true
  }
}

resource "aws_dynamodb_table" "meals" {
  name                        = "${var.prefix}meals"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "user_id"
  range_key                   = "sk"
  deletion_protection_enabled = true

  attribute {
    name = "user_id"
    type = "S"
  }

  attribute {
    name = "sk"
    type = "S"
  }

  # Only the meal form's idempotency claims (sort keys "~idem#…") carry
  # expires_at; TTL deletes them lazily, and the app needs no prompt
  # deletion of them.
  ttl {
    attribute_name = "expires_at"
    enabled        = true
  }

  on_demand_throughput {
    max_read_request_units  = var.max_read_request_units
    max_write_request_units = var.max_write_request_units
  }

  point_in_time_recovery {
    enabled = true
  }

  server_side_encryption {
    enabled = true
  }

  lifecycle {
    prevent_destroy = true
  }
}

resource "aws_dynamodb_table" "shares" {
  name                        = "${var.prefix}shares"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "share_token"
  deletion_protection_enabled = true

  attribute {
    name = "share_token"
    type = "S"
  }

  # Expired share links are deleted by TTL, lazily (up to days late); the app
  # checks expiry itself.
  ttl {
    attribute_name = "expires_at"
    enabled        = true
  }

  on_demand_throughput {
    max_read_request_units  = var.max_read_request_units
    max_write_request_units = var.max_write_request_units
  }

  point_in_time_recovery {
    enabled = true
  }

  server_side_encryption {
    enabled = true
  }

  lifecycle {
    prevent_destroy = true
  }
}

resource "aws_dynamodb_table" "invites" {
  name                        = "${var.prefix}invites"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "invite_token"
  deletion_protection_enabled = true

  attribute {
    name = "invite_token"
    type = "S"
  }

  ttl {
    attribute_name = "expires_at"
    enabled        = true
  }

  on_demand_throughput {
    max_read_request_units  = var.max_read_request_units
    max_write_request_units = var.max_write_request_units
  }

  point_in_time_recovery {
    enabled = true
  }

  server_side_encryption {
    enabled = true
  }

  lifecycle {
    prevent_destroy = true
  }
}
