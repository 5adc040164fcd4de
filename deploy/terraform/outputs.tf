output "app_environment" {
  description = "Settings for the app's environment (add the sign-in client, GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET or the NDIRO_OIDC_ settings, then NDIRO_BASE_URL and ADMIN_EMAILS)."
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
