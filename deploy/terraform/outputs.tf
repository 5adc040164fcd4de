# What the app needs from Terraform. The settings Terraform knows, one
# source for both forms below.
locals {
  app_environment = {
    NDIRO_MODE         = "aws"
    AWS_REGION         = var.region
    NDIRO_TABLE_PREFIX = var.prefix
    NDIRO_BUCKET       = aws_s3_bucket.photos.id
  }
}

output "app_environment" {
  description = "Settings for the app's environment (add the sign-in client, GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET or the NDIRO_OIDC_ settings, then NDIRO_BASE_URL and ADMIN_EMAILS)."
  value       = local.app_environment
}

# terraform output -raw env_file: NAME=value lines for systemd's
# EnvironmentFile= and docker run --env-file (deploy/README.md, step 3).
output "env_file" {
  description = "The settings Terraform knows as an env file; append NDIRO_BASE_URL, ADMIN_EMAILS and the sign-in client."
  value = join("", concat([
    "# ndiro: settings from Terraform (terraform output -raw env_file).\n",
    "# Add NDIRO_BASE_URL, ADMIN_EMAILS and the sign-in client (deploy/README.md,\n",
    "# step 3). No NDIRO_ADDR: each way of running ndiro sets its own.\n",
  ], [for name, value in local.app_environment : "${name}=${value}\n"]))
}

output "iam_policy_arn" {
  description = "The app's policy; the roles below hold it. Attach it yourself only to an IAM user whose keys the service gets."
  value       = aws_iam_policy.app.arn
}

output "instance_profile_name" {
  description = "EC2 instance profile whose role holds only the app policy (null unless instance_profile)."
  value       = one(aws_iam_instance_profile.app[*].name)
}

output "ecs_task_role_arn" {
  description = "Role for the ECS task definition's taskRoleArn, holding only the app policy (null unless ecs_task_role)."
  value       = one(aws_iam_role.task[*].arn)
}
