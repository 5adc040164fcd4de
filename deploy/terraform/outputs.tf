output "app_environment" {
  description = "Settings for the app's environment (add GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET, NDIRO_BASE_URL and ADMIN_EMAILS)."
  value = {
    NDIRO_MODE         = "aws"
    AWS_REGION         = var.region
    NDIRO_TABLE_PREFIX = var.prefix
    NDIRO_BUCKET       = aws_s3_bucket.photos.id
  }
}

output "iam_policy_arn" {
  description = "Attach this policy to the role or user the app runs as."
  value       = aws_iam_policy.app.arn
}
