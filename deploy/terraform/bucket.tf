# The private photo bucket. Nothing in it is ever public: the app proxies
# every photo (DESIGN.md, photos), so all four public-access blocks are on.

resource "aws_s3_bucket" "photos" {
  bucket = var.bucket_name

  lifecycle {
    prevent_destroy = true
  }
}

resource "aws_s3_bucket_public_access_block" "photos" {
  bucket                  = aws_s3_bucket.photos.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "photos" {
  bucket = aws_s3_bucket.photos.id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "photos" {
  bucket = aws_s3_bucket.photos.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "AES256"
    }
    bucket_key_enabled = true
  }
}

# Versioning keeps every deleted or replaced photo as a noncurrent version
# for var.photo_versions_days (35 by default, the tables' point-in-time
# recovery window), so a restore of the tables can get its photos back
# (deploy/README.md, "Backups and restore"). The app's policy has no
# s3:DeleteObjectVersion: nothing running as ndiro can remove a version
# before then. The cost: an account deletion's photos stay that long as
# noncurrent versions, invisible to the app, then S3 removes them.
resource "aws_s3_bucket_versioning" "photos" {
  bucket = aws_s3_bucket.photos.id
  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "photos" {
  bucket = aws_s3_bucket.photos.id
  # Versioning first: these rules act on noncurrent versions.
  depends_on = [aws_s3_bucket_versioning.photos]

  rule {
    id     = "abort-incomplete-multipart-uploads"
    status = "Enabled"
    filter {}
    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }
  }
  # Meal photos: a deleted or replaced one goes for good after
  # photo_versions_days, and the delete marker left alone then goes too.
  rule {
    id     = "expire-old-photo-versions"
    status = "Enabled"
    filter {
      prefix = "users/"
    }
    noncurrent_version_expiration {
      noncurrent_days = var.photo_versions_days
    }
    expiration {
      expired_object_delete_marker = true
    }
  }
  # Uploads kept while a form is corrected (DESIGN.md, photos) live a day,
  # and so do their old versions; S3 removes the delete markers of a rule
  # with days by itself.
  rule {
    id     = "expire-pending-uploads"
    status = "Enabled"
    filter {
      prefix = "pending/"
    }
    expiration {
      days = 1
    }
    noncurrent_version_expiration {
      noncurrent_days = 1
    }
  }
}

data "aws_iam_policy_document" "photos_tls_only" {
  statement {
    sid     = "DenyInsecureTransport"
    effect  = "Deny"
    actions = ["s3:*"]
    resources = [
      aws_s3_bucket.photos.arn,
      "${aws_s3_bucket.photos.arn}/*",
    ]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_s3_bucket_policy" "photos" {
  bucket = aws_s3_bucket.photos.id
  policy = data.aws_iam_policy_document.photos_tls_only.json

  depends_on = [aws_s3_bucket_public_access_block.photos]
}
