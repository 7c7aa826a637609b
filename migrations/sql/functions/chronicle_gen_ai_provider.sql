CREATE FUNCTION chronicle_gen_ai_provider(p_model text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN strpos(p_model, '/') = 0 THEN NULL
                ELSE CASE split_part(p_model, '/', 1)
                         WHEN 'bedrock' THEN 'aws.bedrock'
                         WHEN 'azure' THEN 'azure.ai.openai'
                         WHEN 'azure_ai' THEN 'azure.ai.inference'
                         WHEN 'gemini' THEN 'gcp.gemini'
                         WHEN 'vertex_ai' THEN 'gcp.vertex_ai'
                         WHEN 'mistral' THEN 'mistral_ai'
                         WHEN 'xai' THEN 'x_ai'
                         WHEN 'watsonx' THEN 'ibm.watsonx.ai'
                         ELSE split_part(p_model, '/', 1)
                     END
           END
$$;
